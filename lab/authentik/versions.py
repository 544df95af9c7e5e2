"""Which Authentik release the stand-in plays: 2024.10, 2025.2 or 2025.10 (a group has one ``parent``), or 2025.12
or current (``parents``).

Up to 2025.10 Authentik's ``GroupSerializer`` has ``parent`` (a group UUID or null) and ``parent_name`` (the
authentik-client 2025.10 package on PyPI still models ``parent``); 2025.12 gave a group a list ``parents``
(the digraph group hierarchy, goauthentik/authentik PR 17050, first released in 2025.12; authentik-client 2025.12
models ``parents``)
(``lab/authentik/schema.yaml``, Authentik 2026.5's OpenAPI schema: ``parents``, ``parents_obj``, ``children``).
Like Django REST framework, each release ignores a field it does not know, so a client writing the other
release's field gets a 2xx and an un-nested group. ``GET /api/v3/admin/version/`` reports the release.
"""

from __future__ import annotations

from typing import Any

AUTHENTIK_2024_10 = "2024.10.5"
AUTHENTIK_2025_2 = "2025.2.4"
AUTHENTIK_2025_10 = "2025.10.3"
AUTHENTIK_2025_12 = "2025.12.1"
AUTHENTIK_CURRENT = "2026.5.0"
MODES = {
    "2024.10": AUTHENTIK_2024_10,
    "2025.2": AUTHENTIK_2025_2,
    "2025.10": AUTHENTIK_2025_10,
    "2025.12": AUTHENTIK_2025_12,
    "current": AUTHENTIK_CURRENT,
}
FIRST_PARENTS_RELEASE = (2025, 12)
"""The first release whose groups have a list ``parents`` instead of one ``parent``."""


def single_parent(version: str) -> bool:
    """Releases before 2025.12 give a group a single ``parent``."""
    year, minor = (int(part) for part in version.split(".")[:2])
    return (year, minor) < FIRST_PARENTS_RELEASE


def group_write(version: str, body: dict[str, Any]) -> dict[str, Any]:
    """A group create/update body as the release reads it: the other release's field dropped, and a 2024.10
    ``parent`` turned into the store's parent list (``[]`` for null)."""
    if not single_parent(version):
        return {k: v for k, v in body.items() if k not in ("parent", "parent_name")}
    out = {k: v for k, v in body.items() if k not in ("parents", "parent")}
    if "parent" in body:
        out["parents"] = [] if body["parent"] is None else [body["parent"]]
    return out


def group_fields(
    version: str, parents: list[str], parent_names: list[str], parents_obj: Any, children: list[str], children_obj: Any
) -> dict[str, Any]:
    """The parent/child fields of a serialized group in this release."""
    if single_parent(version):
        return {"parent": parents[0] if parents else None, "parent_name": parent_names[0] if parent_names else None}
    return {"parents": parents, "parents_obj": parents_obj, "children": children, "children_obj": children_obj}


def version_body(version: str) -> dict[str, Any]:
    """``GET /api/v3/admin/version/`` (schema ``Version``)."""
    return {
        "version_current": version,
        "version_latest": version,
        "version_latest_valid": True,
        "build_hash": "",
        "outdated": False,
        "outpost_outdated": False,
    }
