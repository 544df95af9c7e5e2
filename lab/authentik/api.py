"""HTTP handlers of the Authentik stand-in (``/api/v3/...``), with Authentik's status codes and bodies.

Errors: 400 ``ValidationError`` (field -> messages), 403 ``GenericError`` ``{"detail"}`` for missing or
wrong tokens (Authentik answers 403, not 401), 404 ``{"detail"}``. Every successful write re-projects
the directory through :class:`lab.authentik.directory.DirectorySync` when one is configured.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tenantflow.lab.authentik import query, serialize
from tenantflow.lab.authentik.directory import DirectorySync, LdapSettings
from tenantflow.lab.authentik.store import ApiValidationError, AuthentikStore, NotFoundError
from tenantflow.lab.authentik.versions import AUTHENTIK_CURRENT, group_write, version_body

PREFIX = "/api/v3"
ANONYMOUS_PATHS = frozenset({f"{PREFIX}/root/config/"})
USER_ORDERING = ("pk", "username", "name", "email", "is_active", "date_joined", "last_login", "path", "type")
GROUP_ORDERING = ("name", "is_superuser", "pk")
LDAP_PROVIDER_PK = 1
LDAP_PROVIDER_NAME = "ldap"


@dataclass
class AuthentikService:
    """Everything the handlers share."""

    store: AuthentikStore
    token: str
    ldap: LdapSettings
    sync: DirectorySync | None
    version: str = AUTHENTIK_CURRENT
    """The Authentik release played (:mod:`lab.authentik.versions`): 2024.10 has ``parent``, later ``parents``."""

    async def changed(self) -> None:
        if self.sync is not None:
            await self.sync.sync()


SERVICE_KEY = web.AppKey("authentik_service", AuthentikService)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _detail(status: int, detail: str) -> web.Response:
    return web.json_response({"detail": detail}, status=status)


@web.middleware
async def authentik_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bearer-token check and mapping of store exceptions onto Authentik's error bodies."""
    if not request.path.startswith(PREFIX + "/"):
        return await handler(request)
    service = request.app[SERVICE_KEY]
    if request.path not in ANONYMOUS_PATHS:
        header = request.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        if not header or scheme.lower() != "bearer" or not credential:
            return _detail(403, "Authentication credentials were not provided.")
        if not hmac.compare_digest(credential.strip(), service.token):
            return _detail(403, "Token invalid/expired")
    try:
        return await handler(request)
    except ApiValidationError as exc:
        return web.json_response(exc.errors, status=400)
    except NotFoundError as exc:
        return _detail(404, exc.detail)


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except json.JSONDecodeError as exc:
        raise ApiValidationError({"non_field_errors": [f"JSON parse error - {exc}"]}) from exc
    if not isinstance(body, dict):
        raise ApiValidationError({"non_field_errors": ["Invalid data. Expected a dictionary."]})
    return body


def _user_pk(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isdigit():
        raise NotFoundError("No User matches the given query.")
    return int(raw)


def _service(request: web.Request) -> AuthentikService:
    return request.app[SERVICE_KEY]


# -- users ---------------------------------------------------------------------------------------


async def list_users(request: web.Request) -> web.Response:
    service = _service(request)
    include_groups = query.parse_bool(request.query, "include_groups", True) is not False
    users = query.order(query.filter_users(service.store, request.query), request.query, "username", USER_ORDERING)
    return web.json_response(
        query.paginate(users, request.query, lambda u: serialize.user(service.store, u, include_groups=include_groups))
    )


async def create_user(request: web.Request) -> web.Response:
    service = _service(request)
    user = service.store.create_user(await _body(request))
    await service.changed()
    return web.json_response(serialize.user(service.store, user), status=201)


async def get_user(request: web.Request) -> web.Response:
    service = _service(request)
    return web.json_response(serialize.user(service.store, service.store.user(_user_pk(request))))


async def update_user(request: web.Request) -> web.Response:
    service = _service(request)
    user = service.store.update_user(_user_pk(request), await _body(request), partial=request.method == "PATCH")
    await service.changed()
    return web.json_response(serialize.user(service.store, user))


async def delete_user(request: web.Request) -> web.Response:
    service = _service(request)
    service.store.delete_user(_user_pk(request))
    await service.changed()
    return web.Response(status=204)


async def set_password(request: web.Request) -> web.Response:
    service = _service(request)
    service.store.set_password(_user_pk(request), await _body(request))
    return web.Response(status=204)


# -- groups --------------------------------------------------------------------------------------


def _group_flags(request: web.Request) -> dict[str, Any]:
    return {
        "version": _service(request).version,
        "include_users": query.parse_bool(request.query, "include_users", True) is not False,
        "include_parents": query.parse_bool(request.query, "include_parents", False) is True,
        "include_children": query.parse_bool(request.query, "include_children", False) is True,
    }


async def list_groups(request: web.Request) -> web.Response:
    service = _service(request)
    flags = _group_flags(request)
    groups = query.order(query.filter_groups(service.store, request.query), request.query, "name", GROUP_ORDERING)
    return web.json_response(
        query.paginate(groups, request.query, lambda g: serialize.group(service.store, g, **flags))
    )


async def create_group(request: web.Request) -> web.Response:
    service = _service(request)
    group = service.store.create_group(group_write(service.version, await _body(request)))
    await service.changed()
    return web.json_response(serialize.group(service.store, group, version=service.version), status=201)


async def get_group(request: web.Request) -> web.Response:
    service = _service(request)
    group = service.store.group(request.match_info["group_uuid"])
    return web.json_response(serialize.group(service.store, group, **_group_flags(request)))


async def update_group(request: web.Request) -> web.Response:
    service = _service(request)
    group = service.store.update_group(
        request.match_info["group_uuid"],
        group_write(service.version, await _body(request)),
        partial=request.method == "PATCH",
    )
    await service.changed()
    return web.json_response(serialize.group(service.store, group, version=service.version))


async def delete_group(request: web.Request) -> web.Response:
    service = _service(request)
    service.store.delete_group(request.match_info["group_uuid"])
    await service.changed()
    return web.Response(status=204)


async def add_user(request: web.Request) -> web.Response:
    service = _service(request)
    service.store.add_user(request.match_info["group_uuid"], await _body(request))
    await service.changed()
    return web.Response(status=204)


async def remove_user(request: web.Request) -> web.Response:
    service = _service(request)
    service.store.remove_user(request.match_info["group_uuid"], await _body(request))
    await service.changed()
    return web.Response(status=204)


# -- providers and root --------------------------------------------------------------------------


def _ldap_provider(service: AuthentikService) -> dict[str, Any]:
    return serialize.ldap_provider(
        LDAP_PROVIDER_PK,
        LDAP_PROVIDER_NAME,
        service.ldap.base_dn,
        service.ldap.uid_start_number,
        service.ldap.gid_start_number,
    )


async def list_ldap_providers(request: web.Request) -> web.Response:
    provider = _ldap_provider(_service(request))
    return web.json_response(query.paginate([provider], request.query, lambda p: p))


async def get_ldap_provider(request: web.Request) -> web.Response:
    if request.match_info["id"] != str(LDAP_PROVIDER_PK):
        raise NotFoundError("No LDAPProvider matches the given query.")
    return web.json_response(_ldap_provider(_service(request)))


async def admin_version(request: web.Request) -> web.Response:
    return web.json_response(version_body(_service(request).version))


async def root_config(_: web.Request) -> web.Response:
    return web.json_response(serialize.root_config())


def routes() -> list[web.RouteDef]:
    users = f"{PREFIX}/core/users/"
    user = users + "{id}/"
    groups = f"{PREFIX}/core/groups/"
    group = groups + "{group_uuid}/"
    return [
        web.get(users, list_users),
        web.post(users, create_user),
        web.get(user, get_user),
        web.put(user, update_user),
        web.patch(user, update_user),
        web.delete(user, delete_user),
        web.post(user + "set_password/", set_password),
        web.get(groups, list_groups),
        web.post(groups, create_group),
        web.get(group, get_group),
        web.put(group, update_group),
        web.patch(group, update_group),
        web.delete(group, delete_group),
        web.post(group + "add_user/", add_user),
        web.post(group + "remove_user/", remove_user),
        web.get(f"{PREFIX}/providers/ldap/", list_ldap_providers),
        web.get(f"{PREFIX}/providers/ldap/{{id}}/", get_ldap_provider),
        web.get(f"{PREFIX}/root/config/", root_config),
        web.get(f"{PREFIX}/admin/version/", admin_version),
    ]
