"""Build the Authentik stand-in as an aiohttp app (lab journal, faults and snapshot included)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

from tenantflow.lab.authentik.api import SERVICE_KEY, AuthentikService, authentik_middleware, routes
from tenantflow.lab.authentik.directory import DirectorySink, DirectorySync, LdapSettings
from tenantflow.lab.authentik.store import AuthentikStore
from tenantflow.lab.authentik.versions import AUTHENTIK_CURRENT
from tenantflow.lab.endpoints import LDAP_BASE_DN
from tenantflow.lab.httpbase import make_app

SYNC_KEY = web.AppKey("authentik_directory_sync", DirectorySync)
LDAP_BIND_ACCOUNT: Mapping[str, Any] = {
    "username": "ldap-bind",
    "name": "LDAP bind service account",
    "type": "service_account",
    "path": "goauthentik.io/service-accounts",
}


PLATFORM_TENANTS_GROUP: Mapping[str, Any] = {"name": "tenants", "attributes": {"platform": True}}
"""The platform's parent of every tenant group (runbook 2a: ``Parent: tenants``)."""


def build_app(
    token: str,
    directory: DirectorySink | None = None,
    ldap: LdapSettings | None = None,
    install_id: str | None = None,
    seed_users: Sequence[Mapping[str, Any]] = (LDAP_BIND_ACCOUNT,),
    seed_groups: Sequence[Mapping[str, Any]] = (),
    store: AuthentikStore | None = None,
    version: str = AUTHENTIK_CURRENT,
) -> web.Application:
    """The Authentik API v3 stand-in.

    ``token`` is the one admin API token accepted as ``Authorization: Bearer``. ``directory``, when
    given, receives the LDAP outpost projection after every write (a full push happens at start-up).
    ``ldap`` sets the LDAP provider's base DN and uid/gid start numbers (defaults: the lab's base DN,
    2000, 4000). ``install_id`` seeds the users' ``uid`` hashes (random by default). ``seed_users`` are
    created first (pk 1, 2, ...): by default the outpost's bind service account ``ldap-bind`` (pk 1, so
    uidNumber 2001 as in the lab's slapd seed) so tenant users never reuse its numbers. ``seed_groups``
    come next (the lab passes :data:`PLATFORM_TENANTS_GROUP`, parent of every tenant group). A ``store``
    restored from an earlier run (:meth:`AuthentikStore.restore`) is served as it is, without seeds.
    ``version`` is the Authentik release played (:mod:`lab.authentik.versions`).
    """
    if store is None:
        store = AuthentikStore(install_id or str(uuid.uuid4()))
        for user in seed_users:
            store.create_user(dict(user))
        for group in seed_groups:
            store.create_group(dict(group))
    settings = ldap or LdapSettings(base_dn=LDAP_BASE_DN)

    app = make_app("authentik", snapshot=store.snapshot, middlewares=[authentik_middleware])
    sync = DirectorySync(store, settings, directory) if directory is not None else None
    app[SERVICE_KEY] = AuthentikService(store=store, token=token, ldap=settings, sync=sync, version=version)
    if sync is not None:
        app[SYNC_KEY] = sync

        async def initial_push(_: web.Application) -> None:
            await sync.resync()

        app.on_startup.append(initial_push)
    app.add_routes(routes())
    return app
