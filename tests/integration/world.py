"""A snapshot of every layer of the lab as one JSON-able dict, and a readable diff of two snapshots.

Layers: the three kube stores, Authentik and Weka (their ``/_lab/snapshot``), Slurm
(``sacctmgr -P -n show account/user/assoc/qos`` and ``scontrol show partition`` on the
host, with the lab's ``SLURM_CONF``) and slapd (``ldapsearch`` of the whole tree as the
bind account). Lists of named things are keyed by name so a diff says which object moved.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import httpx

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.records import DEFAULT_NAMESPACE as RECORDS_NAMESPACE

World = dict[str, Any]

SACCTMGR_FORMATS: dict[str, str] = {
    "account": "account,descr,org",
    "user": "user,defaultaccount,admin",
    "assoc": "cluster,account,user,partition,parentname,share,grptres,grpjobs,maxjobs,grptresmins,maxwall,qos,"
    "defaultqos",
    "qos": "name,priority,grptres,maxwall,flags,preemptmode",
}


def _get_json(url: str, path: str) -> Any:
    with httpx.Client(base_url=url, verify=False, timeout=10) as http:
        response = http.get(path)
        response.raise_for_status()
        return response.json()


def is_record(obj: dict[str, Any]) -> bool:
    """An object of a kube snapshot that belongs to the run records (:mod:`models.records`): completed runs keep
    them on purpose, one version more each time, so world comparisons leave them out."""
    return RECORDS_NAMESPACE in (obj["namespace"], obj["name"] if obj["resource"] == "namespaces" else None)


def _kube(url: str) -> dict[str, Any]:
    """Every object but the run records."""
    objects = [o for o in _get_json(url, "/_lab/snapshot")["objects"] if not is_record(o)]
    return {f"{o['group'] or 'core'}/{o['resource']}/{o['namespace'] or '-'}/{o['name']}": o["object"] for o in objects}


def _by(items: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return {str(item[key]): item for item in items}


def _authentik(lab: LabEndpoints) -> dict[str, Any]:
    snap = _get_json(lab.authentik_url, "/_lab/snapshot")
    return {
        "users": _by(snap["users"], "username"),
        "groups": _by(snap["groups"], "name"),
        **{k: v for k, v in snap.items() if k not in ("users", "groups")},
    }


def _weka(lab: LabEndpoints) -> dict[str, Any]:
    snap = _get_json(lab.weka_url, "/_lab/snapshot")
    keyed = {"organizations": "name", "filesystems": "name", "users": "username"}
    return {key: _by(value, keyed[key]) if key in keyed else value for key, value in snap.items()}


def _run(lab: LabEndpoints, argv: list[str]) -> str:
    env = {**os.environ, "SLURM_CONF": str(lab.slurm_conf)}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def _slurm(lab: LabEndpoints) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entity, fmt in SACCTMGR_FORMATS.items():
        lines = _run(lab, ["sacctmgr", "-P", "-n", "show", entity, f"format={fmt}"]).splitlines()
        out[entity] = sorted(line for line in lines if line.strip())
    partitions: dict[str, str] = {}
    for block in _run(lab, ["scontrol", "-o", "show", "partition"]).splitlines():
        fields = block.split()
        if fields:
            partitions[fields[0]] = " ".join(sorted(fields[1:]))
    out["partitions"] = partitions
    return out


def _ldap(lab: LabEndpoints) -> dict[str, dict[str, list[str]]]:
    ldif = _run(
        lab,
        [
            "ldapsearch",
            "-x",
            "-LLL",
            "-o",
            "ldif-wrap=no",
            "-H",
            lab.ldap_url,
            "-D",
            lab.ldap_bind_dn,
            "-w",
            lab.ldap_bind_password,
            "-b",
            lab.ldap_base_dn,
        ],
    )
    entries: dict[str, dict[str, list[str]]] = {}
    for block in ldif.strip().split("\n\n"):
        attrs: dict[str, list[str]] = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            attrs.setdefault(key, []).append(value.strip())
        dn = attrs.pop("dn")[0]
        entries[dn] = {key: sorted(values) for key, values in attrs.items()}
    return entries


def world_snapshot(lab: LabEndpoints) -> World:
    """Every layer of the lab, read through its real interface."""
    world: World = {f"kube-{context}": _kube(url) for context, url in lab.kube_urls.items()}
    world["authentik"] = _authentik(lab)
    world["weka"] = _weka(lab)
    world["slurm"] = _slurm(lab)
    world["ldap"] = _ldap(lab)
    return json.loads(json.dumps(world))


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(item, f"{path}/{key}" if path else str(key), out)
    else:
        out[path] = value


def leaves(world: World) -> dict[str, Any]:
    """Every leaf of a snapshot by its ``/``-joined path (lists and empty dicts are leaves)."""
    out: dict[str, Any] = {}
    _flatten(world, "", out)
    return out


def diff(before: World, after: World) -> list[str]:
    """One line per leaf that was added, removed or changed, sorted by path."""
    old, new = leaves(before), leaves(after)
    lines = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            lines.append(f"- {path}: {json.dumps(old[path])}")
        elif path not in old:
            lines.append(f"+ {path}: {json.dumps(new[path])}")
        elif old[path] != new[path]:
            lines.append(f"~ {path}: {json.dumps(old[path])} -> {json.dumps(new[path])}")
    return lines


def describe_diff(before: World, after: World, limit: int = 60) -> str:
    lines = diff(before, after)
    shown = lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])
    return "\n".join(shown) or "no difference"
