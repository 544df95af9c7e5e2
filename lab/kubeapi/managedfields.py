"""``metadata.managedFields`` as kube-apiserver keeps them: which manager set which field, by Apply or Update.

Public sources: the Kubernetes documentation "Server-Side Apply" (field management, managers, the FieldsV1
format: ``f:<field>``, ``k:<key object>``, ``v:<value>``, ``.`` for the node itself) and the API reference of
``ManagedFieldsEntry`` (manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource); the refusals
follow ``ValidateCreateOptions`` / ``ValidateUpdateOptions`` / ``ValidatePatchOptions`` /
``ValidateFieldManager`` in k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go; a write without a
field manager is recorded under the first ``/``-separated part of its User-Agent (``managerOrUserAgent`` in
k8s.io/apiserver/pkg/endpoints/handlers), so the Python client's default shows up as ``OpenAPI-Generator``.

A field set is a set of paths, each a tuple of FieldsV1 keys. Lists the emulator merges by key
(:data:`lab.kubeapi.patching.LIST_MERGE_KEYS`) are associative (``k:``), ``finalizers`` is a set (``v:``), every
other list is atomic (owned whole), as for untagged upstream fields. An inner node is a member of a set (``.``)
when the write added it; ``metadata``, ``spec`` and ``status`` always exist in a Go object, so they never are.
Below the top level the emulator cannot tell Go value structs and non-omitempty lists (always present) from
pointers and omitempty fields, and counts every added map or list as added. An Apply owns the leaves and list
items of its configuration. An Update gives its manager the fields it added or changed, taking them from other managers;
fields that no longer exist leave every set; an entry left empty is dropped.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tenantflow.lab.kubeapi import errors
from tenantflow.lab.kubeapi.objects import Obj, now
from tenantflow.lab.kubeapi.patching import LIST_MERGE_KEYS, PRIMITIVE_SET_LISTS

FieldPath = tuple[str, ...]
FieldSet = frozenset[FieldPath]
MAX_MANAGER_LENGTH = 128
UNSET_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
ALWAYS_PRESENT = frozenset({("f:metadata",), ("f:spec",), ("f:status",)})
LAB_MANAGER = "lab-controllers"
"""The field manager of writes by the lab's in-process controllers."""
Record = Callable[[Obj | None, Obj], None]
"""Sets the managedFields of a written object, given the object before (``None`` on create) and after."""
INNER = object()
"""The value of an inner node (a non-empty map or a keyed list item) in :func:`nodes`."""


@dataclass(frozen=True)
class Writer:
    """Who writes, how: a manager, ``Update`` or ``Apply``, and the subresource (``""`` for the main resource)."""

    manager: str
    operation: str = "Update"
    subresource: str = ""


def manager_from_user_agent(user_agent: str) -> str:
    """The manager the apiserver records for a write that names none: the User-Agent up to its first ``/``."""
    return user_agent.split("/", 1)[0][:MAX_MANAGER_LENGTH]


def validate_options(options_kind: str, manager: str, *, apply: bool = False, force: bool = False) -> None:
    """Refuse a fieldManager the apiserver refuses (422 on ``CreateOptions``, ``UpdateOptions``, ``PatchOptions``)."""
    causes: list[tuple[str, str]] = []
    if options_kind == "PatchOptions" and not apply and force:
        causes.append(("force", "Forbidden: may not be specified for non-apply patch"))
    if apply and not manager:
        causes.append(("fieldManager", "Required value: is required for apply patch"))
    if len(manager.encode()) > MAX_MANAGER_LENGTH:
        causes.append(("fieldManager", f"Too long: may not be more than {MAX_MANAGER_LENGTH} bytes"))
    for position, char in enumerate(manager):
        if unicodedata.category(char)[0] in "CZ" and char != " ":
            bad = f"invalid character U+{ord(char):04X} (at position {position})"
            causes.append(("fieldManager", f"Invalid value: {json.dumps(manager)}: {bad}"))
    if causes:
        raise errors.invalid(options_kind, "meta.k8s.io", "", causes)


def item_key(field: str, item: Any) -> str | None:
    """The FieldsV1 key of one item of list ``field``; ``None`` for an atomic list."""
    if field in PRIMITIVE_SET_LISTS:
        return "v:" + json.dumps(item, separators=(",", ":"))
    for key in LIST_MERGE_KEYS.get(field, ()):
        if isinstance(item, dict) and key in item:
            return "k:" + json.dumps({key: item[key]}, separators=(",", ":"))
    return None


def _walk(value: Any, path: FieldPath, field: str, out: dict[FieldPath, Any]) -> None:
    if isinstance(value, dict) and value:
        if path:
            out[path] = INNER
        for key, child in value.items():
            _walk(child, (*path, f"f:{key}"), key, out)
        return
    keys = [item_key(field, item) for item in value] if isinstance(value, list) and value else []
    if not keys or None in keys:
        out[path] = value
        return
    out[path] = INNER
    for key, item in zip(keys, value, strict=True):
        assert key is not None
        if isinstance(item, dict) and item:
            out[(*path, key)] = INNER
            for name, child in item.items():
                _walk(child, (*path, key, f"f:{name}"), name, out)
        else:
            out[(*path, key)] = item


def nodes(obj: Obj | None, subresource: str = "", status_subresource: bool = False) -> dict[FieldPath, Any]:
    """Every field of ``obj`` a manager can own, by path: a leaf's value, or :data:`INNER`.

    ``subresource="status"`` keeps only ``status``; a main-resource write of a kind with a status subresource
    leaves ``status`` out (the apiserver resets it)."""
    if obj is None:
        return {}
    if subresource == "status":
        body: Obj = {"status": obj["status"]} if "status" in obj else {}
    else:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in UNSET_METADATA}
        body["metadata"] = meta
        if status_subresource:
            body.pop("status", None)
    out: dict[FieldPath, Any] = {}
    _walk(body, (), "", out)
    out.pop((), None)
    return out


def changed(before: dict[FieldPath, Any], after: dict[FieldPath, Any]) -> FieldSet:
    """The fields a write added or changed: new or different leaves, and inner nodes it added."""
    return frozenset(
        path
        for path, value in after.items()
        if (value is INNER and path not in before and path not in ALWAYS_PRESENT)
        or (value is not INNER and (path not in before or before[path] != value))
    )


def applied(config: dict[FieldPath, Any]) -> FieldSet:
    """The fields an applied configuration sets: its leaves and list items (an Apply owns no map as such)."""
    return frozenset(path for path, value in config.items() if value is not INNER or path[-1][:2] in ("k:", "v:"))


# ---------------------------------------------------------------- FieldsV1 encoding
def encode(paths: Iterable[FieldPath]) -> dict[str, Any]:
    """The FieldsV1 tree of a field set (``.`` where a member also has members below it)."""
    members = set(paths)
    tree: dict[str, Any] = {}
    for path in sorted(members):
        node = tree
        for part in path:
            node = node.setdefault(part, {})
    for path in members:
        node = tree
        for part in path:
            node = node[part]
        if node:
            node["."] = {}
    return tree


def decode(fields: dict[str, Any], prefix: FieldPath = ()) -> FieldSet:
    """The field set of a FieldsV1 tree."""
    out: set[FieldPath] = set()
    for key, child in fields.items():
        if key == ".":
            out.add(prefix)
        elif child:
            out |= decode(child, (*prefix, key))
        else:
            out.add((*prefix, key))
    return frozenset(out)


# ---------------------------------------------------------------- entries
@dataclass
class Entry:
    """One ``managedFields`` item, its set decoded."""

    manager: str
    operation: str
    api_version: str
    time: str
    fields: FieldSet
    subresource: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_json(self) -> Obj:
        entry: Obj = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": encode(self.fields),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def entries(obj: Obj | None) -> list[Entry]:
    """The entries an object carries."""
    return [
        Entry(
            manager=item.get("manager", ""),
            operation=item.get("operation", "Update"),
            api_version=item.get("apiVersion", ""),
            time=item.get("time", ""),
            fields=decode(item.get("fieldsV1") or {}),
            subresource=item.get("subresource", ""),
        )
        for item in ((obj or {}).get("metadata") or {}).get("managedFields") or []
    ]


def transfer(
    owners: list[Entry],
    writer: Writer,
    api_version: str,
    taken: FieldSet,
    existing: Iterable[FieldPath],
    lost: FieldSet | None = None,
) -> list[Entry]:
    """Give ``taken`` to ``writer`` (merged into its Update entry, replacing its Apply entry; its time now) and
    take ``lost`` (by default ``taken``) from everyone else; keep only fields that exist, drop entries left empty,
    keep the order. Nothing taken leaves every entry, and its time, as it was."""
    alive = frozenset(existing)
    lost = taken if lost is None else lost
    key = (writer.manager, writer.operation, writer.subresource)
    out: list[Entry] = []
    for entry in owners:
        fields, when, version = (
            (entry.fields if entry.key == key else entry.fields - lost),
            entry.time,
            entry.api_version,
        )
        if entry.key == key and taken:
            previous = entry.fields if writer.operation == "Update" else frozenset()
            fields, when, version = previous | taken, now(), api_version
        if fields & alive:
            out.append(Entry(entry.manager, entry.operation, version, when, fields & alive, entry.subresource))
    if taken and key not in {e.key for e in owners}:
        out.append(Entry(writer.manager, writer.operation, api_version, now(), taken & alive, writer.subresource))
    return out


def record_update(before: Obj | None, after: Obj, writer: Writer, status_subresource: bool) -> None:
    """Set ``after``'s managedFields for an Update (a create, replace or non-apply patch) by ``writer``."""
    scope = nodes(after, writer.subresource, status_subresource)
    taken = changed(nodes(before, writer.subresource, status_subresource), scope)
    alive = nodes(after)
    result = transfer(entries(before), writer, after.get("apiVersion", ""), taken, alive)
    after.setdefault("metadata", {})["managedFields"] = [e.to_json() for e in result]


def updates(writer: Writer, status_subresource: bool) -> Record:
    """How an Update by ``writer`` records its fields."""
    return lambda before, after: record_update(before, after, writer, status_subresource)
