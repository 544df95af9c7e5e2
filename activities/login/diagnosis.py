"""Why a login release is not Ready yet, in one message: its HelmRelease's conditions, its pods, their events.

Flux's helm-controller reports a release in ``status.conditions`` (fluxcd/helm-controller
``api/v2/condition_types.go``; https://fluxcd.io/flux/components/helm/helmreleases/#conditions): ``Ready`` and
``Released``, each with ``status``, ``reason`` (``InstallFailed``, ``UpgradeFailed``, ``ArtifactFailed``...) and
``message``. A pod (core/v1 ``PodStatus``) says why it is not Ready through its phase, its conditions that are not
True (``PodScheduled``/``Unschedulable``...) and its containers' ``waiting`` reasons (``ImagePullBackOff``...); a
pod that was never created leaves a Warning Event on whatever tried (a StatefulSet's ``FailedCreate`` carries
the API server's refusal, e.g. Pod Security Admission's ``pods "..." is forbidden: violates PodSecurity ...``).
Events are read with ``GET /api/v1/namespaces/<ns>/events`` (core/v1 Event, ``involvedObject``).
"""

from __future__ import annotations

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.loginpod import is_ready
from tenantflow.activities.common.manifests import Manifest

RELEASE_CONDITIONS = ("Ready", "Released")
EVENTS_SHOWN = 3


def release_conditions(release: Manifest | None) -> list[str]:
    """``Ready=False (InstallFailed): <message>`` for each of the release's Ready and Released conditions."""
    if release is None:
        return ["the HelmRelease is gone"]
    conditions = {c.get("type"): c for c in (release.get("status") or {}).get("conditions") or []}
    found = [
        f"{kind}={c.get('status')} ({c.get('reason') or 'no reason'}): {c.get('message') or 'no message'}"
        for kind in RELEASE_CONDITIONS
        if (c := conditions.get(kind))
    ]
    return found or ["the HelmRelease has no Ready or Released condition yet (is Flux's helm-controller running?)"]


def pod_state(pod: Manifest) -> str:
    """``<name>: <phase>`` and why it is not Ready (conditions not True, containers waiting)."""
    status = pod.get("status") or {}
    why = [
        f"{c.get('type')} {c.get('reason') or c.get('status')}" + (f": {c['message']}" if c.get("message") else "")
        for c in status.get("conditions") or []
        if c.get("status") != "True"
    ]
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting:
            why.append(f"container {container.get('name')} {waiting.get('reason')}: {waiting.get('message', '')}")
    return f"{pod['metadata']['name']}: {status.get('phase', 'Pending')}" + (f" ({'; '.join(why)})" if why else "")


def warning_events(objs: KubeObjects, namespace: str, release: str, pods: list[str]) -> list[str]:
    """The newest Warning events on the release, its pods, or the chart's objects named after the release."""
    events = [
        e
        for e in objs.list("Event", namespace)
        if e.get("type") == "Warning"
        and (
            (name := str((e.get("involvedObject") or {}).get("name") or "")) in pods
            or name == release
            or name.startswith(f"{release}-")
        )
    ]
    events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    shown: list[str] = []
    for e in reversed(events):
        involved = e.get("involvedObject") or {}
        line = f"{involved.get('kind')} {involved.get('name')} {e.get('reason')}: {e.get('message')}"
        if line not in shown:
            shown.append(line)
    return shown[:EVENTS_SHOWN]


def diagnosis(
    objs: KubeObjects, namespace: str, release_name: str, release: Manifest | None, pods: list[Manifest], wanted: int
) -> str:
    """One message: how many pods are Ready of how many wanted, the release's conditions, each pod that is not
    Ready, and the newest Warning events."""
    names = [p["metadata"]["name"] for p in pods]
    parts = [f"HelmRelease {namespace}/{release_name}: " + "; ".join(release_conditions(release))]
    parts.append(
        "pods (app.kubernetes.io/instance=" + release_name + "): " + ("; ".join(map(pod_state, pods)) or "none")
    )
    events = warning_events(objs, namespace, release_name, names)
    if events:
        parts.append("events: " + "; ".join(events))
    ready = sum(map(is_ready, pods))
    return f"{ready} of {wanted} login pod(s) Ready. " + ". ".join(parts)
