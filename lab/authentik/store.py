"""In-memory state of the Authentik stand-in: users, groups, memberships, and their invariants.

Write operations validate like Authentik's DRF serializers and raise :class:`ApiValidationError`
(field -> messages) or :class:`NotFoundError`; reads return the stored records. Rendering to the
API's JSON shapes lives in :mod:`lab.authentik.serialize`. :meth:`AuthentikStore.dump` and
:meth:`AuthentikStore.restore` carry the whole state, the user primary-key sequence included, across a
restart of the lab (a pk is never handed out twice, as with Authentik's PostgreSQL sequence). Every write
notes the users and groups whose LDAP projection it may change (:meth:`AuthentikStore.take_touched`), so
the outpost projection (:mod:`lab.authentik.directory`) is recomputed for those only.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

USER_TYPES = ("internal", "external", "service_account", "internal_service_account")
USERNAME_MAX = 150
EMAIL_MAX = 254
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ApiValidationError(Exception):
    """A 400 answer: ``errors`` maps field names (or ``non_field_errors``) to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


class NotFoundError(Exception):
    """A 404 answer with DRF's detail text."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def num_pk_of(group_uuid: str) -> int:
    """Authentik's ``Group.num_pk``: the first five decimal digits of the UUID's integer."""
    return int(str(uuid.UUID(group_uuid).int)[:5])


@dataclass
class User:
    pk: int
    username: str
    name: str
    email: str = ""
    is_active: bool = True
    attributes: dict[str, Any] = field(default_factory=dict)
    path: str = "users"
    type: str = "internal"
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    last_login: str | None = None
    date_joined: str = field(default_factory=now_iso)
    last_updated: str = field(default_factory=now_iso)
    password_change_date: str = field(default_factory=now_iso)
    password_hash: str | None = None


@dataclass
class Group:
    pk: str
    name: str
    is_superuser: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)
    parents: list[str] = field(default_factory=list)
    users: set[int] = field(default_factory=set)

    @property
    def num_pk(self) -> int:
        return num_pk_of(self.pk)


def _required(errors: dict[str, list[str]], body: dict[str, Any], key: str) -> None:
    if key not in body:
        errors.setdefault(key, []).append("This field is required.")


def _check_str(
    errors: dict[str, list[str]], body: dict[str, Any], key: str, *, blank: bool, max_length: int | None = None
) -> None:
    if key not in body:
        return
    value = body[key]
    if not isinstance(value, str):
        errors.setdefault(key, []).append("Not a valid string.")
    elif not blank and not value.strip():
        errors.setdefault(key, []).append("This field may not be blank.")
    elif max_length is not None and len(value) > max_length:
        errors.setdefault(key, []).append(f"Ensure this field has no more than {max_length} characters.")


def _check_type(errors: dict[str, list[str]], body: dict[str, Any], key: str, kind: type, message: str) -> None:
    if key in body and not isinstance(body[key], kind):
        errors.setdefault(key, []).append(message)


class AuthentikStore:
    """Users and groups with Authentik's uniqueness rules and pk allocation."""

    def __init__(self, install_id: str) -> None:
        self.install_id = install_id
        self.users: dict[int, User] = {}
        self.groups: dict[str, Group] = {}
        self._next_user_pk = 1
        self._touched_users: set[int] = set()
        self._touched_groups: set[str] = set()
        self.revision = 0
        """Bumped by every write: the lab saves the state when it moved (:class:`lab.statefile.Saved`)."""

    def touch(self, users: Iterable[int] = (), groups: Iterable[str] = ()) -> None:
        """Note a write, and the users and groups (by pk) whose projection it may have changed."""
        self.revision += 1
        self._touched_users.update(users)
        self._touched_groups.update(groups)

    def take_touched(self) -> tuple[set[int], set[str]]:
        """The users and groups touched since the last call (deleted ones included)."""
        taken = self._touched_users, self._touched_groups
        self._touched_users, self._touched_groups = set(), set()
        return taken

    # -- lookups ---------------------------------------------------------------------------------

    def user(self, pk: int) -> User:
        found = self.users.get(pk)
        if found is None:
            raise NotFoundError("No User matches the given query.")
        return found

    def group(self, pk: str) -> Group:
        found = self.groups.get(pk)
        if found is None:
            raise NotFoundError("No Group matches the given query.")
        return found

    def group_by_name(self, name: str) -> Group | None:
        return next((g for g in self.groups.values() if g.name == name), None)

    def user_by_username(self, username: str) -> User | None:
        return next((u for u in self.users.values() if u.username == username), None)

    def groups_of(self, user_pk: int) -> list[Group]:
        return sorted((g for g in self.groups.values() if user_pk in g.users), key=lambda g: g.name)

    def children_of(self, group_pk: str) -> list[Group]:
        return sorted((g for g in self.groups.values() if group_pk in g.parents), key=lambda g: g.name)

    def user_uid(self, user: User) -> str:
        """Authentik's ``User.uid``: sha256 of ``"<pk>-<install id>"``."""
        return hashlib.sha256(f"{user.pk}-{self.install_id}".encode()).hexdigest()

    def is_superuser(self, user: User) -> bool:
        return any(g.is_superuser for g in self.groups_of(user.pk))

    # -- users -----------------------------------------------------------------------------------

    def _validate_user(self, body: dict[str, Any], *, partial: bool, current: User | None) -> None:
        errors: dict[str, list[str]] = {}
        if not partial:
            _required(errors, body, "username")
            _required(errors, body, "name")
        _check_str(errors, body, "username", blank=False, max_length=USERNAME_MAX)
        _check_str(errors, body, "name", blank=True)
        _check_str(errors, body, "path", blank=False)
        _check_str(errors, body, "email", blank=True, max_length=EMAIL_MAX)
        _check_type(errors, body, "is_active", bool, "Must be a valid boolean.")
        _check_type(errors, body, "attributes", dict, "Value must be valid JSON.")
        if isinstance(body.get("email"), str) and body["email"] and not EMAIL_RE.match(body["email"]):
            errors.setdefault("email", []).append("Enter a valid email address.")
        if "type" in body and body["type"] not in USER_TYPES:
            errors.setdefault("type", []).append(f'"{body["type"]}" is not a valid choice.')
        if isinstance(body.get("username"), str) and "username" not in errors:
            clash = self.user_by_username(body["username"])
            if clash is not None and clash is not current:
                errors["username"] = ["A user with that username already exists."]
        self._check_group_refs(errors, body, "groups")
        if errors:
            raise ApiValidationError(errors)

    def _check_group_refs(self, errors: dict[str, list[str]], body: dict[str, Any], key: str) -> None:
        refs = body.get(key)
        if refs is None:
            return
        if not isinstance(refs, list):
            kind = type(refs).__name__
            errors.setdefault(key, []).append(f'Expected a list of items but got type "{kind}".')
            return
        for ref in refs:
            if not isinstance(ref, str) or ref not in self.groups:
                errors.setdefault(key, []).append(f'Invalid pk "{ref}" - object does not exist.')

    def create_user(self, body: dict[str, Any]) -> User:
        self._validate_user(body, partial=False, current=None)
        user = User(pk=self._next_user_pk, username=body["username"], name=body["name"])
        self._next_user_pk += 1
        self._apply_user(user, body)
        self.users[user.pk] = user
        self.touch(users=[user.pk])
        return user

    def update_user(self, pk: int, body: dict[str, Any], *, partial: bool) -> User:
        user = self.user(pk)
        self._validate_user(body, partial=partial, current=user)
        if body.get("username", user.username) != user.username:
            self.touch(groups=(g.pk for g in self.groups_of(pk)))
        self._apply_user(user, body)
        user.last_updated = now_iso()
        self.touch(users=[pk])
        return user

    def _apply_user(self, user: User, body: dict[str, Any]) -> None:
        for key in ("username", "name", "email", "is_active", "path", "type", "last_login"):
            if key in body:
                setattr(user, key, body[key])
        if "attributes" in body:
            user.attributes = dict(body["attributes"])
        if "groups" in body:
            wanted = set(body["groups"])
            for group in self.groups.values():
                if (group.pk in wanted) != (user.pk in group.users):
                    self.touch(groups=[group.pk])
                if group.pk in wanted:
                    group.users.add(user.pk)
                else:
                    group.users.discard(user.pk)

    def delete_user(self, pk: int) -> User:
        user = self.user(pk)
        self.touch(users=[pk], groups=(g.pk for g in self.groups_of(pk)))
        for group in self.groups.values():
            group.users.discard(pk)
        del self.users[pk]
        return user

    def set_password(self, pk: int, body: dict[str, Any]) -> None:
        user = self.user(pk)
        password = body.get("password")
        if not isinstance(password, str) or not password:
            raise ApiValidationError({"password": ["This field is required."]})
        user.password_hash = hashlib.sha256(password.encode()).hexdigest()
        user.password_change_date = now_iso()
        self.touch()

    # -- groups ----------------------------------------------------------------------------------

    def _validate_group(self, body: dict[str, Any], *, partial: bool, current: Group | None) -> None:
        errors: dict[str, list[str]] = {}
        if not partial:
            _required(errors, body, "name")
        _check_str(errors, body, "name", blank=False)
        _check_type(errors, body, "is_superuser", bool, "Must be a valid boolean.")
        _check_type(errors, body, "attributes", dict, "Value must be valid JSON.")
        if isinstance(body.get("name"), str) and "name" not in errors:
            clash = self.group_by_name(body["name"])
            if clash is not None and clash is not current:
                errors["name"] = ["group with this name already exists."]
        self._check_group_refs(errors, body, "parents")
        if current is not None and current.pk in (body.get("parents") or []):
            errors.setdefault("parents", []).append("Cannot set group as parent of itself.")
        users = body.get("users")
        if users is not None:
            if not isinstance(users, list):
                errors.setdefault("users", []).append("Expected a list of items.")
            else:
                for ref in users:
                    if not isinstance(ref, int) or ref not in self.users:
                        errors.setdefault("users", []).append(f'Invalid pk "{ref}" - object does not exist.')
        if errors:
            raise ApiValidationError(errors)

    def create_group(self, body: dict[str, Any]) -> Group:
        self._validate_group(body, partial=False, current=None)
        group = Group(pk=str(uuid.uuid4()), name=body["name"])
        self._apply_group(group, body)
        self.groups[group.pk] = group
        self.touch(users=group.users, groups=[group.pk])
        return group

    def update_group(self, pk: str, body: dict[str, Any], *, partial: bool) -> Group:
        group = self.group(pk)
        self._validate_group(body, partial=partial, current=group)
        before = (group.name, group.is_superuser, set(group.users))
        self._apply_group(group, body)
        name, superuser, members = before
        renamed = (name, superuser) != (group.name, group.is_superuser)
        self.touch(users=members | group.users if renamed else members ^ group.users, groups=[pk])
        return group

    @staticmethod
    def _apply_group(group: Group, body: dict[str, Any]) -> None:
        for key in ("name", "is_superuser"):
            if key in body:
                setattr(group, key, body[key])
        if "attributes" in body:
            group.attributes = dict(body["attributes"])
        if "parents" in body:
            group.parents = list(dict.fromkeys(body["parents"]))
        if "users" in body:
            group.users = set(body["users"])

    def delete_group(self, pk: str) -> Group:
        group = self.group(pk)
        self.touch(users=group.users, groups=[pk])
        del self.groups[pk]
        for other in self.groups.values():
            if pk in other.parents:
                other.parents.remove(pk)
        return group

    def add_user(self, group_pk: str, body: dict[str, Any]) -> None:
        group = self.group(group_pk)
        user_pk = self._account_pk(body)
        if user_pk not in self.users:
            raise NotFoundError("Not found.")
        group.users.add(user_pk)
        self.touch(users=[user_pk], groups=[group_pk])

    def remove_user(self, group_pk: str, body: dict[str, Any]) -> None:
        group = self.group(group_pk)
        user_pk = self._account_pk(body)
        if user_pk not in self.users:
            raise NotFoundError("Not found.")
        group.users.discard(user_pk)
        self.touch(users=[user_pk], groups=[group_pk])

    @staticmethod
    def _account_pk(body: dict[str, Any]) -> int:
        pk = body.get("pk")
        if pk is None:
            raise ApiValidationError({"pk": ["This field is required."]})
        if isinstance(pk, bool) or not isinstance(pk, int):
            raise ApiValidationError({"pk": ["A valid integer is required."]})
        return pk

    # -- snapshot --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Whole state in stable order, without volatile timestamps."""
        users = [
            {
                "pk": u.pk,
                "username": u.username,
                "name": u.name,
                "email": u.email,
                "is_active": u.is_active,
                "attributes": u.attributes,
                "path": u.path,
                "type": u.type,
                "uuid": u.uuid,
                "password_set": u.password_hash is not None,
                "groups": [g.name for g in self.groups_of(u.pk)],
            }
            for u in sorted(self.users.values(), key=lambda u: u.pk)
        ]
        groups = [
            {
                "pk": g.pk,
                "num_pk": g.num_pk,
                "name": g.name,
                "is_superuser": g.is_superuser,
                "attributes": g.attributes,
                "parents": sorted(self.groups[p].name for p in g.parents),
                "members": sorted(self.users[u].username for u in g.users),
            }
            for g in sorted(self.groups.values(), key=lambda g: g.name)
        ]
        return {"users": users, "groups": groups}

    def dump(self) -> dict[str, Any]:
        """The whole state for :meth:`restore`, including secrets (password hashes) and the pk sequence."""
        return {
            "install_id": self.install_id,
            "next_user_pk": self._next_user_pk,
            "users": [asdict(u) for u in sorted(self.users.values(), key=lambda u: u.pk)],
            "groups": [{**asdict(g), "users": sorted(g.users)} for g in self.groups.values()],
        }

    @classmethod
    def restore(cls, dump: dict[str, Any]) -> AuthentikStore:
        store = cls(dump["install_id"])
        store._next_user_pk = int(dump["next_user_pk"])
        for raw in dump["users"]:
            user = User(**raw)
            store.users[user.pk] = user
        for raw in dump["groups"]:
            group = Group(**{**raw, "users": set(raw["users"])})
            store.groups[group.pk] = group
        return store
