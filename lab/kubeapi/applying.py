"""Server-side apply in the emulator: ``PATCH`` with ``application/apply-patch+yaml`` and a field manager.

What kube-apiserver does, per the Kubernetes documentation "Server-Side Apply" (conflicts, ``force``, merge
strategy, removing fields a manager stops applying): the applied configuration creates the object when it is
absent (201) or is merged into it (strategic merge, :mod:`lab.kubeapi.patching`); a field the configuration sets
to a different value than the one another manager owns is a conflict (409 ``Conflict``, one cause per field,
the message as ``getConflictMessage`` in k8s.io/apiserver's fieldmanager prints it) unless ``force=true``, which
takes the field; a field the manager applied before, applies no longer and no one else owns is removed. The
manager's ``Apply`` entry then holds exactly the fields of its configuration (:mod:`lab.kubeapi.managedfields`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tenantflow.lab.kubeapi import errors, managedfields
from tenantflow.lab.kubeapi.clone import clone
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.managedfields import INNER, Entry, FieldPath, FieldSet, Record, Writer
from tenantflow.lab.kubeapi.media_types import APPLY_PATCH
from tenantflow.lab.kubeapi.objects import Obj
from tenantflow.lab.kubeapi.patching import strategic_merge
from tenantflow.lab.kubeapi.registry import ResourceType

__all__ = ["APPLY_PATCH", "Plan", "Record", "conflict_error", "dotted", "plan"]


def dotted(path: FieldPath) -> str:
    """A field path as the apiserver prints it: ``.spec.containers[name="web"].image``, ``.finalizers[="x"]``."""
    out = ""
    for part in path:
        kind, _, text = part.partition(":")
        if kind == "f":
            out += f".{text}"
        elif kind == "k":
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(text).items()) + "]"
        else:
            out += f"[={text}]"
    return out


def _who(entry: Entry) -> str:
    who = json.dumps(entry.manager)
    if entry.subresource:
        who += f" with subresource {json.dumps(entry.subresource)}"
    return f"{who} using {entry.api_version}" if entry.operation == "Update" else who


def conflict_error(rt: ResourceType, name: str, found: list[tuple[FieldPath, Entry]]) -> ApiError:
    """409 naming every conflicting field and its manager."""
    if len(found) == 1:
        path, entry = found[0]
        message = f"Apply failed with 1 conflict: conflict with {_who(entry)}: {dotted(path)}"
    else:
        lines: list[str] = []
        for who in sorted({_who(entry) for _, entry in found}):
            lines.append(f"conflicts with {who}:")
            lines += [f"- {dotted(path)}" for path, entry in found if _who(entry) == who]
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    details: dict[str, Any] = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    details["causes"] = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {_who(entry)}", "field": dotted(path)}
        for path, entry in found
    ]
    return ApiError(409, "Conflict", message, details)


def _remove(obj: Any, path: FieldPath) -> None:
    """Delete the field at ``path`` (a map key, a keyed list item or a set value) when it is there."""
    parent: Any = obj
    for index, part in enumerate(path):
        last = index == len(path) - 1
        kind, _, text = part.partition(":")
        if kind == "f" and isinstance(parent, dict):
            if last:
                parent.pop(text, None)
                return
            parent = parent.get(text)
        elif isinstance(parent, list):
            field = path[index - 1].partition(":")[2] if index else ""
            at = [i for i, item in enumerate(parent) if managedfields.item_key(field, item) == part]
            if not at:
                return
            if last:
                del parent[at[0]]
                return
            parent = parent[at[0]]
        else:
            return


def _unmanaged(obj: Obj) -> Obj:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}


@dataclass
class Plan:
    """The object an apply writes, and how it records its managedFields."""

    obj: Obj
    record: Record


def plan(rt: ResourceType, name: str, current: Obj | None, config: Any, manager: str, force: bool) -> Plan:
    """Merge ``config`` into ``current`` (``None``: create from it) for ``manager``; 409 on a conflict."""
    if not isinstance(config, dict) or not config.get("apiVersion") or not config.get("kind"):
        raise errors.bad_request("the applied configuration must be an object with apiVersion and kind")
    meta = config.get("metadata") or {}
    if meta.get("name", name) != name:
        raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    if meta.get("managedFields"):
        raise errors.bad_request("metadata.managedFields must be nil")
    writer = Writer(manager, "Apply")
    config_nodes = managedfields.nodes(config, status_subresource=rt.status_subresource)
    mine: FieldSet = managedfields.applied(config_nodes)
    owners = managedfields.entries(current)
    live = managedfields.nodes(current, status_subresource=rt.status_subresource)
    found = [
        (path, entry)
        for path in sorted(mine)
        if config_nodes[path] is not INNER and path in live and live[path] != config_nodes[path]
        for entry in owners
        if entry.key != (manager, "Apply", "") and path in entry.fields
    ]
    if found and not force:
        raise conflict_error(rt, name, found)
    new = strategic_merge(clone(current) if current is not None else {}, config)
    new.setdefault("metadata", {})["name"] = name
    previous = next((e.fields for e in owners if e.key == (manager, "Apply", "")), frozenset())
    others = frozenset().union(*(e.fields for e in owners if e.key != (manager, "Apply", "")))
    for path in sorted(previous - mine - others, key=len, reverse=True):
        _remove(new, path)
    forced = frozenset(path for path, _ in found)

    def record(before: Obj | None, after: Obj) -> None:
        if before is not None and not forced and previous == mine and _unmanaged(before) == _unmanaged(after):
            after["metadata"]["managedFields"] = clone(before["metadata"].get("managedFields"))
            return
        kept = managedfields.transfer(
            owners, writer, after.get("apiVersion", ""), mine, managedfields.nodes(after), lost=forced
        )
        after.setdefault("metadata", {})["managedFields"] = [entry.to_json() for entry in kept]

    return Plan(new, record)
