"""Render the stand-in's records in the exact JSON shapes of Authentik API v3 (User, Group, ...)."""

from __future__ import annotations

from typing import Any

from tenantflow.lab.authentik.store import AuthentikStore, Group, User
from tenantflow.lab.authentik.versions import AUTHENTIK_CURRENT, group_fields

DEFAULT_AVATAR = "/static/dist/assets/images/user_default.png"


def partial_group(group: Group) -> dict[str, Any]:
    return {
        "pk": group.pk,
        "num_pk": group.num_pk,
        "name": group.name,
        "is_superuser": group.is_superuser,
        "attributes": group.attributes,
    }


def related_group(group: Group) -> dict[str, Any]:
    return {
        "pk": group.pk,
        "name": group.name,
        "is_superuser": group.is_superuser,
        "attributes": group.attributes,
        "group_uuid": group.pk,
    }


def partial_user(store: AuthentikStore, user: User) -> dict[str, Any]:
    return {
        "pk": user.pk,
        "username": user.username,
        "name": user.name,
        "is_active": user.is_active,
        "last_login": user.last_login,
        "email": user.email,
        "attributes": user.attributes,
        "uid": store.user_uid(user),
    }


def user(store: AuthentikStore, record: User, *, include_groups: bool = True) -> dict[str, Any]:
    groups = store.groups_of(record.pk)
    return {
        "pk": record.pk,
        "username": record.username,
        "name": record.name,
        "is_active": record.is_active,
        "last_login": record.last_login,
        "date_joined": record.date_joined,
        "is_superuser": store.is_superuser(record),
        "groups": [g.pk for g in groups],
        "groups_obj": [partial_group(g) for g in groups] if include_groups else None,
        "roles": [],
        "roles_obj": [],
        "email": record.email,
        "avatar": DEFAULT_AVATAR,
        "attributes": record.attributes,
        "uid": store.user_uid(record),
        "path": record.path,
        "type": record.type,
        "uuid": record.uuid,
        "password_change_date": record.password_change_date,
        "last_updated": record.last_updated,
    }


def group(
    store: AuthentikStore,
    record: Group,
    *,
    include_users: bool = True,
    include_parents: bool = False,
    include_children: bool = False,
    version: str = AUTHENTIK_CURRENT,
) -> dict[str, Any]:
    members = sorted((store.users[pk] for pk in record.users), key=lambda u: u.pk)
    children = store.children_of(record.pk)
    parents = [store.groups[p] for p in record.parents]
    return {
        "pk": record.pk,
        "num_pk": record.num_pk,
        "name": record.name,
        "is_superuser": record.is_superuser,
        **group_fields(
            version,
            list(record.parents),
            [p.name for p in parents],
            [related_group(p) for p in parents] if include_parents else None,
            [c.pk for c in children],
            [related_group(c) for c in children] if include_children else None,
        ),
        "users": [u.pk for u in members],
        "users_obj": [partial_user(store, u) for u in members] if include_users else None,
        "attributes": record.attributes,
        "roles": [],
        "roles_obj": [],
        "inherited_roles_obj": None,
    }


def ldap_provider(pk: int, name: str, base_dn: str, uid_start: int, gid_start: int) -> dict[str, Any]:
    return {
        "pk": pk,
        "name": name,
        "authentication_flow": None,
        "authorization_flow": "9c1b7a8e-1f0e-4a8c-9d52-3a6f5d2b7c01",
        "invalidation_flow": "2e4f6a8c-0b1d-4e3f-8a5c-7d9e1f3a5b02",
        "property_mappings": [],
        "component": "ak-provider-ldap-form",
        "assigned_application_slug": "ldap",
        "assigned_application_name": "LDAP",
        "assigned_backchannel_application_slug": None,
        "assigned_backchannel_application_name": None,
        "verbose_name": "LDAP Provider",
        "verbose_name_plural": "LDAP Providers",
        "meta_model_name": "authentik_providers_ldap.ldapprovider",
        "base_dn": base_dn,
        "certificate": None,
        "tls_server_name": "",
        "uid_start_number": uid_start,
        "gid_start_number": gid_start,
        "outpost_set": ["authentik-ldap-outpost-default"],
        "search_mode": "direct",
        "bind_mode": "direct",
        "mfa_support": True,
    }


def root_config() -> dict[str, Any]:
    return {
        "error_reporting": {
            "enabled": False,
            "sentry_dsn": "",
            "environment": "lab",
            "send_pii": False,
            "traces_sample_rate": 0.0,
        },
        "capabilities": ["can_save_media"],
        "cache_timeout": 300,
        "cache_timeout_flows": 300,
        "cache_timeout_policies": 300,
    }
