"""List filtering, ordering and Authentik's pagination envelope (``next``/``previous`` are 0 when absent)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from multidict import MultiMapping

from tenantflow.lab.authentik.store import ApiValidationError, AuthentikStore, Group, NotFoundError, User

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


def parse_bool(query: MultiMapping[str], key: str, default: bool | None) -> bool | None:
    raw = query.get(key)
    if raw is None or raw == "":
        return default
    lowered = raw.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ApiValidationError({key: ["Enter a valid boolean."]})


def _attribute_lookup(attributes: dict[str, Any], path: str) -> tuple[bool, Any]:
    current: Any = attributes
    for part in path.split("__"):
        if not isinstance(current, dict) or part not in current:
            return False, None
        current = current[part]
    return True, current


def attributes_matcher(raw: str | None) -> Callable[[dict[str, Any]], bool]:
    """Authentik's ``attributes`` filter: a JSON object; each key (``a__b`` nests) must equal its value."""
    if raw is None:
        return lambda _: True
    try:
        wanted = json.loads(raw)
    except ValueError as exc:
        raise ApiValidationError({"attributes": ["filter: failed to parse JSON"]}) from exc
    if not isinstance(wanted, dict):
        raise ApiValidationError({"attributes": ["filter: value must be key:value mapping"]})

    def matches(attributes: dict[str, Any]) -> bool:
        for key, value in wanted.items():
            found, actual = _attribute_lookup(attributes, key)
            if not found or actual != value:
                return False
        return True

    return matches


def _choice_error(key: str, value: str) -> ApiValidationError:
    return ApiValidationError({key: [f"Select a valid choice. {value} is not one of the available choices."]})


def filter_users(store: AuthentikStore, query: MultiMapping[str]) -> list[User]:
    users = list(store.users.values())
    for key in ("username", "email", "uuid", "path", "type"):
        values = query.getall(key, [])
        if values:
            users = [u for u in users if getattr(u, key) in values]
    if "path_startswith" in query:
        users = [u for u in users if u.path.startswith(query["path_startswith"])]
    is_active = parse_bool(query, "is_active", None)
    if is_active is not None:
        users = [u for u in users if u.is_active == is_active]
    is_superuser = parse_bool(query, "is_superuser", None)
    if is_superuser is not None:
        users = [u for u in users if store.is_superuser(u) == is_superuser]
    wanted_groups: set[str] = set()
    for name in query.getall("groups_by_name", []):
        group = store.group_by_name(name)
        if group is None:
            raise _choice_error("groups_by_name", name)
        wanted_groups.add(group.pk)
    for pk in query.getall("groups_by_pk", []):
        if pk not in store.groups:
            raise _choice_error("groups_by_pk", pk)
        wanted_groups.add(pk)
    if wanted_groups:
        users = [u for u in users if any(u.pk in store.groups[g].users for g in wanted_groups)]
    matcher = attributes_matcher(query.get("attributes"))
    users = [u for u in users if matcher(u.attributes)]
    search = query.get("search", "").lower()
    if search:
        users = [u for u in users if any(search in f.lower() for f in (u.username, u.name, u.email))]
    return users


def filter_groups(store: AuthentikStore, query: MultiMapping[str]) -> list[Group]:
    groups = list(store.groups.values())
    if "name" in query:
        groups = [g for g in groups if g.name == query["name"]]
    is_superuser = parse_bool(query, "is_superuser", None)
    if is_superuser is not None:
        groups = [g for g in groups if g.is_superuser == is_superuser]
    member_pks: set[int] = set()
    for username in query.getall("members_by_username", []):
        user = store.user_by_username(username)
        if user is None:
            raise _choice_error("members_by_username", username)
        member_pks.add(user.pk)
    for raw in query.getall("members_by_pk", []):
        if not raw.isdigit() or int(raw) not in store.users:
            raise _choice_error("members_by_pk", raw)
        member_pks.add(int(raw))
    if member_pks:
        groups = [g for g in groups if g.users & member_pks]
    matcher = attributes_matcher(query.get("attributes"))
    groups = [g for g in groups if matcher(g.attributes)]
    search = query.get("search", "").lower()
    if search:
        groups = [g for g in groups if search in g.name.lower()]
    return groups


def order(items: list[T], query: MultiMapping[str], default: str, allowed: Sequence[str]) -> list[T]:
    """Apply ``ordering`` (comma list, ``-`` for descending); unknown fields are ignored like DRF."""
    fields = [f.strip() for f in query.get("ordering", default).split(",") if f.strip()]
    fields = [f for f in fields if f.lstrip("-") in allowed] or [default]
    result = list(items)
    for name in reversed(fields):
        key = name.lstrip("-")
        result.sort(key=lambda item: getattr(item, key), reverse=name.startswith("-"))
    return result


def _positive_int(raw: str | None, default: int) -> int | None:
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value > 0 else None


def paginate(items: list[T], query: MultiMapping[str], render: Callable[[T], dict[str, Any]]) -> dict[str, Any]:
    """Authentik's ``Pagination`` envelope over Django's paginator semantics."""
    page_size = min(_positive_int(query.get("page_size"), DEFAULT_PAGE_SIZE) or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    count = len(items)
    total_pages = max(1, -(-count // page_size))
    raw_page = query.get("page", "1")
    page = total_pages if raw_page == "last" else _positive_int(raw_page, 1)
    if page is None or page > total_pages:
        raise NotFoundError("Invalid page.")
    start = (page - 1) * page_size
    window = items[start : start + page_size]
    return {
        "pagination": {
            "next": page + 1 if page < total_pages else 0,
            "previous": page - 1 if page > 1 else 0,
            "count": count,
            "current": page,
            "total_pages": total_pages,
            "start_index": start + 1 if count else 0,
            "end_index": start + len(window),
        },
        "results": [render(item) for item in window],
        "autocomplete": {},
    }
