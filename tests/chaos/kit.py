"""Chaos tooling: a worker as a separate process to SIGKILL, world snapshots to compare, and the session's tally."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import WorkflowHandle

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.status import RunStatus, StepRecord
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.config import TemporalSettings
from tests.approvers import key_of_tester
from tests.integration.world import World, describe_diff, is_record, leaves
from tests.labfixture import lab_services, snapshot

ROOT = Path(__file__).resolve().parents[2]
VOLATILE = frozenset({"pk", "uuid", "num_pk"})


@dataclass
class Scenario:
    """One scenario's line in the summary: how it ended and what it did to objects it had no business with."""

    name: str
    outcome: str = "not finished"
    lost: int = 0
    duplicated: int = 0
    foreign_touched: int = 0


@dataclass
class ChaosStats:
    """What the chaos session did; printed as a table at the end of the run."""

    scenarios: int = 0
    crashes: int = 0
    server_restarts: int = 0
    faults: int = 0
    slowed: int = 0
    runs_completed: int = 0
    runs_failed_as_expected: int = 0
    lost: int = 0
    duplicated: int = 0
    notes: list[str] = field(default_factory=list)
    table: list[Scenario] = field(default_factory=list)

    def scenario(self, name: str) -> Scenario:
        """Count a scenario and open its line in the per-scenario table."""
        self.scenarios += 1
        line = Scenario(name)
        self.table.append(line)
        return line

    def marshal(self) -> dict[str, Any]:
        """These figures in builtin types only, as execnet sends them: a StrEnum outcome such as ``RunOutcome``
        would make the worker crash as it hands its output to the controller."""
        marshalled: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(self)))
        return marshalled

    def absorb(self, other: dict[str, Any]) -> None:
        """Add what another pytest-xdist worker's session did (its :func:`dataclasses.asdict` form)."""
        for key, value in other.items():
            if key == "table":
                self.table += [Scenario(**line) for line in value]
            elif key == "notes":
                self.notes += value
            else:
                setattr(self, key, getattr(self, key) + value)

    def rows(self) -> list[tuple[str, int]]:
        return [
            ("scenarios run", self.scenarios),
            ("worker crashes injected (SIGKILL)", self.crashes),
            ("dev server restarts", self.server_restarts),
            ("dependency faults injected (errors, drops)", self.faults),
            ("requests slowed down (latency faults)", self.slowed),
            ("runs reaching their expected end state", self.runs_completed),
            ("runs refused or failed fast as expected", self.runs_failed_as_expected),
            ("objects lost", self.lost),
            ("objects duplicated", self.duplicated),
        ]


STATS = ChaosStats()


class WorkerProcess:
    """``python -m worker`` against the lab on a private task queue, started and SIGKILLed at will. It reads
    the lab's settings from ``TENANTFLOW_ENV_FILE`` alone: variables another lab left in this process's
    environment would win over the file."""

    def __init__(self, address: str, queue: str, lab: LabEndpoints, log: Path, **env: str) -> None:
        lab_keys = lab.to_env().keys()
        self.env = {
            **{key: value for key, value in os.environ.items() if key not in lab_keys},
            "TEMPORAL_ADDRESS": address,
            "TENANTFLOW_TASK_QUEUE": queue,
            "TENANTFLOW_ENV_FILE": str(lab.state_dir / "lab.env"),
            "TENANTFLOW_LOG_FORMAT": "json",
            "PYTHONPATH": str(ROOT),
            **env,
        }
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60) -> None:
        offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tenantflow.worker"],
                env=self.env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout_s
        while "worker started" not in self.log.read_text(errors="replace")[offset:]:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker did not start within {timeout_s}s")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye, in-flight activities are simply gone."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        STATS.crashes += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def restart_after_crash(self) -> None:
        self.kill()
        self.start()


def settings(address: str, queue: str) -> TemporalSettings:
    """A client's settings for the chaos worker's queue; it signs as the tester, so its runs carry a start proof."""
    return TemporalSettings(
        TEMPORAL_ADDRESS=address, TENANTFLOW_TASK_QUEUE=queue, TENANTFLOW_APPROVAL_KEY=key_of_tester()
    )


def normalized(value: Any) -> Any:
    """Drop generated ids (Authentik pk/uuid) and secret values, which differ between otherwise equal worlds."""
    if isinstance(value, dict):
        if value.get("kind") == "Secret":
            return {
                **{k: normalized(v) for k, v in value.items() if k not in ("data", "stringData")},
                "keys": sorted({**value.get("data", {}), **value.get("stringData", {})}),
            }
        return {k: normalized(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def slurm_dump(lab: LabEndpoints) -> dict[str, list[str]]:
    """Associations, QoS and partitions from the real slurmdbd/slurmctld."""
    env = {**os.environ, "SLURM_CONF": str(lab.slurm_conf)}
    commands = {
        "assoc": [
            "sacctmgr",
            "-n",
            "-P",
            "show",
            "assoc",
            "format=cluster,account,user,parentname,fairshare,grptres,grpjobs,maxjobs,qos,defaultqos",
        ],
        "qos": ["sacctmgr", "-n", "-P", "show", "qos", "format=name,priority,maxwall,grptres,flags"],
        "partitions": ["scontrol", "show", "partition", "-o"],
    }
    return {
        name: sorted(
            subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
        )
        for name, argv in commands.items()
    }


def world(lab: LabEndpoints) -> dict[str, Any]:
    """Every stand-in's state plus the Slurm accounting, normalized for comparison.

    Deactivated Authentik users are left out: offboarding keeps them by design (the runbook keeps user
    records), so the session's earlier tests leave some; a user a run wrongly deactivates shows as lost. The run
    records (:func:`tests.integration.world.is_record`) are left out too: every completed run adds a version."""
    http = normalized(snapshot(lab))
    http["authentik"]["users"] = [u for u in http["authentik"]["users"] if u.get("is_active", True)]
    for snap in http.values():
        if "objects" in snap:
            snap["objects"] = [o for o in snap["objects"] if not is_record(o)]
    return {"http": http, "slurm": slurm_dump(lab)}


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
RECREATED = frozenset(
    {
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "observedGeneration",
        "lastTransitionTime",
        "gidNumber",
        "gid",
    }
)
"""What recreating (or changing and changing back) an object changes by itself: kube identity, versions (the
generation and the controller's observedGeneration that follows it) and condition times, and the tenant
group's gidNumber (Authentik's num_pk of the new group, copied to its users and set as the group of the tenant's
Weka directories, ``owners/<path>/gid``)."""


def comparable(state: Any) -> Any:
    """A world without generated UUIDs (kube uids, Weka object and token uids, Authentik group pks) and
    :data:`RECREATED` keys, its objects keyed by name so that a difference names the object."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in RECREATED}
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            keys = [next((str(v[k]) for k in ("name", "username", "path") if k in v), "") for v in value]
            if "group" in value[0] and "resource" in value[0]:
                keys = [f"{v['group']}/{v['resource']}/{v['namespace']}/{v['name']}" for v in value]
            if all(keys) and len(set(keys)) == len(keys):
                return {key: strip(v) for key, v in zip(keys, value, strict=True)}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(UUID.sub("<uuid>", json.dumps(state))))


def object_keys(state: dict[str, Any]) -> list[str]:
    """One key per object in a world snapshot; a key seen twice is a duplicate. Generated UUIDs in names
    (a dynamically provisioned PersistentVolume is ``pvc-<claim uid>``) read as ``<uuid>``, such a volume keyed
    by its claim as well (two tenants' volumes are two objects, not one twice)."""
    keys: list[str] = []
    for service, snap in state["http"].items():
        for obj in snap.get("objects", []):
            name = UUID.sub("<uuid>", obj["name"])
            claim = (
                obj.get("object", {}).get("spec", {}).get("claimRef")
                if obj["resource"] == "persistentvolumes"
                else None
            )
            if claim and name != obj["name"]:
                name += f" for {claim.get('namespace')}/{claim.get('name')}"
            keys.append(f"{service}/{obj['group']}/{obj['resource']}/{obj['namespace']}/{name}")
        keys += [f"{service}/user/{u['username']}" for u in snap.get("users", [])]
        keys += [f"{service}/group/{g['name']}" for g in snap.get("groups", [])]
    for kind, lines in state["slurm"].items():
        keys += [f"slurm/{kind}/{line.split('|')[0] if kind == 'qos' else line}" for line in lines]
    return keys


def compare_worlds(
    expected: dict[str, Any],
    actual: dict[str, Any],
    view: Callable[[dict[str, Any]], Any] = dict,
    scenario: Scenario | None = None,
) -> None:
    """Count lost and duplicated objects into STATS (and the scenario's line) and assert the two worlds are
    equal (as seen through ``view``, which may leave out what legitimately differs)."""
    want, have = object_keys(expected), object_keys(actual)
    lost = sorted(set(want) - set(have))
    duplicated = sorted({k for k in have if have.count(k) > max(1, want.count(k))} | (set(have) - set(want)))
    STATS.lost += len(lost)
    STATS.duplicated += len(duplicated)
    if scenario is not None:
        scenario.lost += len(lost)
        scenario.duplicated += len(duplicated)
    assert not lost and not duplicated, f"lost {lost}, duplicated or extra {duplicated}"
    assert view(actual) == view(expected), describe_diff(view(expected), view(actual))


VOLATILE_LEAF = re.compile(
    r"/(resourceVersion|generation|managedFields|lastHeartbeatTime|lastTransitionTime|renewTime|observedGeneration"
    r"|slurm\.tenantflow\.io/rendered-hash|unprovisioned_bytes)(/|$)"
)
"""Leaves that change on objects nobody touched (versions, controller heartbeats, field-manager stamps), and
totals that any tenant's own objects move (the partition operator's hash of all partitions, Weka's unprovisioned
capacity)."""


def foreign_touched(before: World, after: World, ours: tuple[str, ...], scenario: Scenario | None = None) -> list[str]:
    """Leaves of objects that existed before and whose path names none of ``ours`` (the scenario's slugs,
    usernames, accounts) that were changed or removed: what a run touched that it did not make. Additions are
    not counted (a run's own new objects carry its names), also inside a collection: an empty one that got
    members, or a list leaf (Slurm's association lines, a node's taints) that only gained elements or lost
    elements naming ``ours``. Counted into the scenario's line."""
    old, new = leaves(before), leaves(after)

    def mentions_ours(text: str) -> bool:
        return any(word in text for word in ours)

    def untouched(path: str, was: Any) -> bool:
        if VOLATILE_LEAF.search(path) or mentions_ours(path) or (path in new and new[path] == was):
            return True
        if path not in new:
            return was in ({}, []) and any(p.startswith(f"{path}/") for p in new)
        now = new[path]
        return (
            isinstance(was, list)
            and isinstance(now, list)
            and all(item in now or mentions_ours(json.dumps(item)) for item in was)
        )

    touched = [
        f"- {path}: {json.dumps(was)}" if path not in new else f"~ {path}: {json.dumps(was)} -> {json.dumps(new[path])}"
        for path, was in sorted(old.items())
        if not untouched(path, was)
    ]
    if scenario is not None:
        scenario.foreign_touched += len(touched)
    return touched


def slow_login_release(latency_ms: int) -> dict[str, Any]:
    """A kube fault rule that keeps ``login.release`` in flight: it waits on the tenant's login pods by label
    (``GET pods?labelSelector=app.kubernetes.io/instance=login-<slug>``), and each such list takes ``latency_ms``."""
    return {
        "path": "/namespaces/[^/]+/pods$",
        "query": "labelSelector=app.kubernetes.io(%2F|/)instance",
        "methods": ["GET"],
        "latency_ms": latency_ms,
    }


def set_faults(
    lab: LabEndpoints, rules: list[dict[str, Any]], seed: int = 7, services: list[str] | None = None
) -> None:
    for name, url in lab_services(lab).items():
        if services is None or name in services:
            with httpx.Client(base_url=url, verify=False, timeout=10) as http:
                http.put("/_lab/faults", json={"rules": rules, "seed": seed}).raise_for_status()


def clear_faults(lab: LabEndpoints) -> int:
    """Remove every fault rule and reset the journals; return how many faults fired (errors and dropped
    connections; added to STATS, as are the slowed-down requests)."""
    fired = 0
    for url in lab_services(lab).values():
        with httpx.Client(base_url=url, verify=False, timeout=10) as http:
            http.delete("/_lab/faults").raise_for_status()
            injected: dict[str, int] = http.get("/_lab/requests").json()["injected"]
            fired += sum(n for kind, n in injected.items() if kind != "latency")
            STATS.slowed += injected.get("latency", 0)
            http.delete("/_lab/requests").raise_for_status()
    STATS.faults += fired
    return fired


def faulted_requests(lab: LabEndpoints, service: str, method: str, path: str) -> list[dict[str, Any]]:
    """Journal entries of ``service`` for ``method`` on paths matching ``path`` that got an injected fault."""
    with httpx.Client(base_url=lab_services(lab)[service], verify=False, timeout=10) as http:
        entries: list[dict[str, Any]] = http.get("/_lab/requests").json()["requests"]
    return [e for e in entries if e["injected"] and e["method"] == method and re.search(path, e["path"])]


def step(status: RunStatus, name: str) -> StepRecord | None:
    """The latest record of step ``name`` (a step may run again during a rollback or retry)."""
    return next((s for s in reversed(status.steps) if s.name == name), None)


def running(name: str) -> Callable[[RunStatus], bool]:
    """The latest record of step ``name`` says it is running."""
    return lambda s: (r := step(s, name)) is not None and r.state == "running"


async def wait_until(
    api: TenantflowClient,
    handle: WorkflowHandle[Any, Any],
    ready: Callable[[RunStatus], bool],
    timeout_s: float = 120,
    what: str = "",
) -> RunStatus:
    """Poll the status query until ``ready``; fail with the stage reached if it never comes."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status = await api.status(handle.id)
        if ready(status):
            return status
        described = await handle.describe()
        if described.status is not None and described.status.name != "RUNNING":
            raise AssertionError(f"run ended ({described.status.name}) at {status.stage} before {what}")
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never reached {what}; stage {status.stage}")
        await asyncio.sleep(0.05)
