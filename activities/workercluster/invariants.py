"""Running work on a worker cluster that enrollment must not disturb: record it, compare it, refuse changes."""

from __future__ import annotations

from typing import Any

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.workercluster.kueue import Kueue
from tenantflow.models.enrollment_workflows import DEPENDENCIES, Invariants, ObjectRef

Obj = dict[str, Any]


def work_state(obj: Obj) -> str:
    status = obj.get("status") or {}
    conds = {c["type"]: c["status"] for c in status.get("conditions") or []}
    for terminal in ("Finished", "Completed", "Failed"):
        if conds.get(terminal) == "True":
            return terminal
    if obj["kind"] == "Workload":
        return "Admitted" if conds.get("Admitted") == "True" else "Pending"
    if obj["kind"] == "Job":
        return "Running" if status.get("active") and status.get("ready") else "NotReady"
    return "Running"


def invariants(objs: KubeObjects, namespaces: list[str]) -> Invariants:
    """Active JobSets, Jobs and Kueue Workloads (read at the Kueue version the worker serves) and the Kueue and
    JobSet Deployments."""
    kueue = Kueue(objs.target)
    work = []
    for ns in sorted(set(namespaces) | {"default"}):
        for kind, found in (
            ("JobSet", objs.list("JobSet", ns)),
            ("Job", objs.list("Job", ns)),
            ("Workload", kueue.list("Workload", ns)),
        ):
            for obj in found:
                if work_state(obj) in ("Finished", "Completed", "Failed"):
                    continue
                work.append(
                    ObjectRef(
                        kind=kind,
                        name=obj["metadata"]["name"],
                        namespace=ns,
                        uid=obj["metadata"]["uid"],
                        state=work_state(obj),
                    )
                )
    deps = []
    for ns, name, *_ in DEPENDENCIES:
        dep = objs.get("Deployment", name, ns)
        if dep is not None:
            deps.append(
                ObjectRef(
                    kind="Deployment",
                    name=name,
                    namespace=ns,
                    uid=dep["metadata"]["uid"],
                    image=dep["spec"]["template"]["spec"]["containers"][0]["image"],
                    state=str((dep.get("status") or {}).get("readyReplicas", 0)),
                )
            )
    return Invariants(workloads=work, deployments=deps)


def _compare(recorded: Invariants, now: Invariants) -> list[str]:
    current = {ref.key(): ref for ref in now.workloads}
    changes = []
    for ref in recorded.workloads:
        seen = current.get(ref.key())
        if seen is None:
            changes.append(f"{ref.key()} disappeared")
        elif (seen.uid, seen.state) != (ref.uid, ref.state):
            changes.append(f"{ref.key()} changed: uid {ref.uid}->{seen.uid}, state {ref.state}->{seen.state}")
    deps = {ref.key(): ref for ref in now.deployments}
    changes += [
        f"{ref.key()} was recreated (uid {ref.uid} -> {deps[ref.key()].uid})"
        for ref in recorded.deployments
        if ref.key() in deps and deps[ref.key()].uid != ref.uid
    ]
    return changes


def verify_invariants(objs: KubeObjects, step_namespaces: list[str], recorded: Invariants) -> Invariants:
    now = invariants(objs, step_namespaces)
    changes = _compare(recorded, now)
    if changes:
        raise fail(
            "InvariantBroken",
            "running work changed during enrollment; the worker stays cordoned: " + "; ".join(changes),
        )
    return now
