"""Authentik: the release and the field its groups nest by, read from the server's answers.

``GET /api/v3/admin/version/`` (``version_current``) and the platform parent group ``GET /api/v3/core/groups/``
as the server serializes it (Authentik's API reference, https://docs.goauthentik.io/docs/developer-docs/api/;
groups gained ``parents`` in 2025.12, goauthentik PR 17050), through :class:`AuthentikClient`. The identity
layer nests tenant groups through whichever field the server serves, so either passes; the check fails when the
platform group is missing (preflight refuses every onboarding then) or the group has neither field.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.authentik_client import AuthentikClient
from tenantflow.activities.common.settings import settings
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "authentik.groups"
GRANT = "the API token (AUTHENTIK_TOKEN) read access to /admin/version/ and /core/groups/"


def authentik_groups(_: Estate) -> Result:
    """The release and the group field (``parent`` up to 2025.10, ``parents`` later) of the platform group."""
    parent = settings().authentik_parent_group
    with AuthentikClient.from_settings() as ak:
        version = ak.version()
        try:
            field = ak.parent_field()
        except ApplicationError as exc:
            if exc.type != "Unsupported":
                raise
            return failed(NAME, f"Authentik {version}: {exc.message}", "run an Authentik release from 2024.10 on")
    if field is None:
        return failed(
            NAME,
            f"Authentik {version}: no platform group {parent!r} (AUTHENTIK_PARENT_GROUP)",
            f"create the group {parent!r} in Authentik, or set AUTHENTIK_PARENT_GROUP to the platform's group",
        )
    shape = "one parent per group" if field == "parent" else "a list of parents"
    return ok(NAME, f"Authentik {version}; groups nest by {field!r} ({shape}), as served for group {parent!r}")
