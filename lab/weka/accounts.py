"""Weka REST API v2 stand-in handlers for who calls: login and token refresh, identity, the cluster, organizations
(cluster admins of Root only) and the users of the caller's organization."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tenantflow.lab.weka.service import (
    data,
    int_field,
    read_body,
    require_cluster_admin,
    require_role,
    service_of,
    session_of,
    text_field,
)
from tenantflow.lab.weka.state import ROLE_CLUSTER_ADMIN, ROLE_ORG_ADMIN, ROOT_ORG, Organization, WekaError, WekaUser

# -- login and identity --------------------------------------------------------------------------


async def login(request: web.Request) -> web.Response:
    service = service_of(request)
    body = await read_body(request)
    username, password = text_field(body, "username"), text_field(body, "password")
    org = service.cluster.org_by_name(text_field(body, "org", required=False) or ROOT_ORG)
    user = next(
        (u for u in service.cluster.users if org is not None and u.username == username and u.org_id == org.id), None
    )
    if user is None or user.password != password:
        raise WekaError(401, "Username or password are incorrect")
    return data(service.tokens.login(user.username, user.org_id, user.role))


async def refresh(request: web.Request) -> web.Response:
    token = text_field(await read_body(request), "refresh_token")
    assert token is not None
    return data(service_of(request).tokens.renew(token))


async def whoami(request: web.Request) -> web.Response:
    session = session_of(request)
    org = service_of(request).cluster.orgs[session.org_id]
    return data(
        {
            "username": session.username,
            "role": session.role,
            "org_id": org.id,
            "org_name": org.name,
            "source": "Internal",
        }
    )


async def token_expiry(request: web.Request) -> web.Response:
    return data({"access_token_expiry": service_of(request).tokens.access_ttl, "refresh_token_expiry": 365 * 24 * 3600})


async def cluster(request: web.Request) -> web.Response:
    return data(service_of(request).cluster.cluster_dict())


# -- organizations -------------------------------------------------------------------------------


async def list_orgs(request: web.Request) -> web.Response:
    require_cluster_admin(request)
    state = service_of(request).cluster
    return data([state.org_dict(o) for o in sorted(state.orgs.values(), key=lambda o: o.id)])


async def multiple_orgs_exist(request: web.Request) -> web.Response:
    return data(len(service_of(request).cluster.orgs) > 1)


async def create_org(request: web.Request) -> web.Response:
    require_cluster_admin(request)
    body = await read_body(request)
    name, username, password = text_field(body, "name"), text_field(body, "username"), text_field(body, "password")
    assert name is not None and username is not None and password is not None
    state = service_of(request).cluster
    ssd, total = int_field(body, "ssd_quota") or 0, int_field(body, "total_quota") or 0
    org = state.create_org(name, username, password, ssd, total)
    return data(state.org_dict(org), status=201)


def _org(request: web.Request) -> Organization:
    require_cluster_admin(request)
    return service_of(request).cluster.org(request.match_info["uid"])


async def get_org(request: web.Request) -> web.Response:
    return data(service_of(request).cluster.org_dict(_org(request)))


async def update_org(request: web.Request) -> web.Response:
    org = _org(request)
    body = await read_body(request)
    state = service_of(request).cluster
    new_name = text_field(body, "name", required=False)
    if new_name is not None and new_name != org.name:
        if org.name == ROOT_ORG or state.org_by_name(new_name) is not None:
            raise WekaError(409, f"Cannot rename organization {org.name} to {new_name}")
        org.name = new_name
    return data(state.org_dict(org))


async def set_org_limits(request: web.Request) -> web.Response:
    org = _org(request)
    body = await read_body(request)
    state = service_of(request).cluster
    state.set_org_limits(org, int_field(body, "ssd_quota"), int_field(body, "total_quota"))
    return data(state.org_dict(org))


async def delete_org(request: web.Request) -> web.Response:
    org = _org(request)
    service = service_of(request)
    service.cluster.delete_org(org)
    service.tokens.drop_org(org.id)
    return data(None)


# -- users of the caller's organization --------------------------------------------------------

USER_ADMINS = frozenset({ROLE_CLUSTER_ADMIN, ROLE_ORG_ADMIN})


def _user_dict(user: WekaUser) -> dict[str, Any]:
    return {"uid": user.uid, "username": user.username, "role": user.role, "org_id": user.org_id, "source": "Internal"}


async def list_users(request: web.Request) -> web.Response:
    session = require_role(request, USER_ADMINS)
    return data([_user_dict(u) for u in service_of(request).cluster.users if u.org_id == session.org_id])


async def create_user(request: web.Request) -> web.Response:
    """``weka user add <username> <role> <password>``: a user of the caller's organization."""
    session = require_role(request, USER_ADMINS)
    body = await read_body(request)
    username, password, role = text_field(body, "username"), text_field(body, "password"), text_field(body, "role")
    assert username is not None and password is not None and role is not None
    user = service_of(request).cluster.create_user(session.org_id, username, password, role)
    return data(_user_dict(user), status=201)


async def delete_user(request: web.Request) -> web.Response:
    session = require_role(request, USER_ADMINS)
    service = service_of(request)
    user = next(
        (u for u in service.cluster.users if u.uid == request.match_info["uid"] and u.org_id == session.org_id), None
    )
    if user is None:
        raise WekaError(404, f"User {request.match_info['uid']} not found")
    if user.username == session.username:
        raise WekaError(400, "A user cannot delete itself")
    service.cluster.users.remove(user)
    service.tokens.drop_user(user.username, user.org_id)
    return data(None)
