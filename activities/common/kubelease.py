"""A mutex across tenantflow workers: one ``coordination.k8s.io/v1`` Lease held around a critical section.

slurmdbd has no compare-and-set: two ``sacctmgr add account X`` at once both succeed, the last one's values win,
and a run's read-back can see its own values just before the other run's land. Two onboardings that want one
name would then both go on, and one rollback could delete what the other uses. Every read-check-write of Slurm
accounting therefore holds :data:`SLURM_ACCOUNTING` (a Lease in the slurmctld namespace), so tenantflow's runs
take turns; a stranger's direct ``sacctmgr`` write is still caught by the markers (Organization, Description).

The protocol is the one client-go's leader election uses with a ``LeaseLock``
(k8s.io/client-go/tools/leaderelection/resourcelock/leaselock.go; Kubernetes docs, "Leases",
https://kubernetes.io/docs/concepts/architecture/leases/): a create is atomic (409 ``AlreadyExists`` for the
loser); an expired lease (``renewTime`` + ``leaseDurationSeconds`` in the past) is taken over by a PUT that
carries the read ``metadata.resourceVersion`` (409 ``Conflict`` when someone else was faster); the holder renews
while it works and releases with a DELETE whose ``preconditions`` name the version it holds. The holder identity is
the activity's workflow and activity id, the same across retries, so an attempt that replaces a killed one takes
its lease back at once instead of waiting for it to expire.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.errors import TRANSIENT
from tenantflow.activities.common.kubeobjects import Kind, Manifest
from tenantflow.activities.common.polling import growing, poll_until
from tenantflow.models.targets import KubeTarget

LEASE = Kind("Lease", "coordination.k8s.io/v1", "leases", True)
SLURM_ACCOUNTING = "tenantflow-slurm-accounting"
DURATION_S = 60
WAIT_S = 240.0


def holder_identity() -> str:
    """``<workflow id>/<activity id>`` inside an activity (stable across its retries); a fresh id elsewhere."""
    if activity.in_activity():
        info = activity.info()
        return f"{info.workflow_id}/{info.activity_id}"
    return f"process/{uuid.uuid4()}"


def _micro(at: datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339 with microseconds, UTC)."""
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.strptime(value.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")


def expired(lease: Manifest, now: datetime) -> bool:
    """Whether the holder stopped renewing: ``renewTime`` (or ``acquireTime``) plus the duration is past."""
    spec = lease.get("spec") or {}
    renewed = _parse(spec.get("renewTime")) or _parse(spec.get("acquireTime"))
    duration = int(spec.get("leaseDurationSeconds") or 0)
    return renewed is None or renewed + timedelta(seconds=duration) < now


@dataclass
class Lease:
    """One named Lease on ``target``; :meth:`held` takes it for the duration of a ``with`` block."""

    target: KubeTarget
    namespace: str
    name: str
    holder: str = field(default_factory=holder_identity)
    duration_s: int = DURATION_S
    wait_s: float = WAIT_S

    def _path(self, name: str = "") -> str:
        return LEASE.path(self.namespace, name)

    def _body(self, now: datetime, current: Manifest | None) -> Manifest:
        spec = (current or {}).get("spec") or {}
        ours = spec.get("holderIdentity") == self.holder
        return {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                **({"resourceVersion": current["metadata"]["resourceVersion"]} if current else {}),
            },
            "spec": {
                "holderIdentity": self.holder,
                "leaseDurationSeconds": self.duration_s,
                "acquireTime": spec["acquireTime"] if ours and current else _micro(now),
                "renewTime": _micro(now),
                "leaseTransitions": int(spec.get("leaseTransitions") or 0) + (0 if ours or not current else 1),
            },
        }

    def _try(self) -> tuple[Manifest | None, Manifest | None]:
        """One attempt: (the lease now ours, None) or (None, the other holder's lease)."""
        now = datetime.now(UTC)
        current = self._get()
        try:
            if current is None:
                return kubeclient.request(self.target, "POST", self._path(), self._body(now, None)), None
            if current["spec"].get("holderIdentity") == self.holder or expired(current, now):
                return kubeclient.request(self.target, "PUT", self._path(self.name), self._body(now, current)), None
        except ApplicationError as err:
            if err.type != "Conflict":
                raise
            return None, self._get()
        return None, current

    def _get(self) -> Manifest | None:
        try:
            return kubeclient.request(self.target, "GET", self._path(self.name))
        except ApplicationError as err:
            if err.type == "NotFound":
                return None
            raise

    def acquire(self) -> Manifest:
        """Take the lease, waiting (heartbeating) while another holder renews it; a retryable error after
        ``wait_s`` names the holder."""
        polled = poll_until(
            self._try,
            lambda got: got[0] is not None,
            every=growing(0.2, 5.0),
            budget_s=self.wait_s,
            detail=lambda got: {"waiting for lease": self.name, "held by": _holder(got[1])},
        )
        mine, other = polled.value
        if mine is None:
            raise ApplicationError(
                f"Lease {self.namespace}/{self.name} is held by {_holder(other)}: another tenantflow run is "
                f"changing Slurm accounting; this step retries",
                type=TRANSIENT,
            )
        return mine

    def release(self, held: Manifest) -> None:
        """Delete the lease if it is still the version this holder last wrote (a stale one is someone else's)."""
        meta = held["metadata"]
        options = {"preconditions": {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}}
        try:
            kubeclient.request(self.target, "DELETE", self._path(self.name), options)
        except ApplicationError as err:
            if err.type not in ("Conflict", "NotFound"):
                raise

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lease for the block, renewing it every third of its duration from a helper thread."""
        current = self.acquire()
        stop = threading.Event()
        latest = [current]

        def renew() -> None:
            while not stop.wait(self.duration_s / 3):
                now = datetime.now(UTC)
                try:
                    latest[0] = kubeclient.request(
                        self.target, "PUT", self._path(self.name), self._body(now, latest[0])
                    )
                except ApplicationError:
                    return

        renewer = threading.Thread(target=renew, name=f"lease-{self.name}", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
            self.release(latest[0])


def _holder(lease: Manifest | None) -> str:
    spec = (lease or {}).get("spec") or {}
    return f"{spec.get('holderIdentity') or '(nobody)'} since {spec.get('acquireTime') or '?'}"
