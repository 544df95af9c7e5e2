"""Figure (g), the users curve: tenants of 3, 30 and 300 users onboarded against the lab, each layer's seconds per
additional user, and whether every activity finished on its first attempt.

Each size is one tenant onboarded through Temporal by the production worker (as in :mod:`bench.lab`) and
offboarded right after, data purged. Its history gives every activity's span and the attempt that closed it
(``ActivityTaskStarted.attempt``); a layer's time is the sum of its activities' spans (``slurm.users`` counts for
``slurm``), and its seconds per additional user the slope between the smallest and the largest tenant. Wall time
is also shown without the smoke jobs, whose length does not depend on the number of users.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pydantic import BaseModel
from temporalio.client import Client

from tenantflow.bench.lab import bench_tenant, durable_once, lab_worker
from tenantflow.bench.runs import offboard
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.runbook import SMOKE
from tenantflow.models.status import RunOutcome
from tenantflow.models.tenant import TenantContract

SIZES = (3, 30, 300)
SMOKE_STEPS = frozenset(step.name for step in SMOKE)


class UsersPoint(BaseModel):
    """One tenant of ``users`` users onboarded through Temporal against the lab."""

    users: int
    slug: str
    workflow_id: str
    ok: bool
    message: str = ""
    wall_s: float
    smoke_s: float
    layer_s: dict[str, float]
    """Seconds inside each layer's activities (``identity``, ``slurm``, ``storage``, ...)."""
    retried: list[str]
    """Activities that needed more than one attempt, as ``name (attempt n)``."""
    cleaned_up: bool

    @property
    def wall_without_smoke_s(self) -> float:
        return self.wall_s - self.smoke_s


class UsersCurve(BaseModel):
    points: list[UsersPoint]

    @property
    def ok(self) -> bool:
        return all(p.ok and p.cleaned_up for p in self.points)

    @property
    def first_attempt(self) -> bool:
        """Every activity of every size finished on its first attempt."""
        return all(not p.retried for p in self.points)

    @property
    def per_user_s(self) -> dict[str, float]:
        """Each layer's seconds per additional user, between the smallest and the largest tenant."""
        if len(self.points) < 2:
            return {}
        small, large = min(self.points, key=lambda p: p.users), max(self.points, key=lambda p: p.users)
        extra = large.users - small.users
        layers = sorted(set(small.layer_s) | set(large.layer_s))
        return (
            {layer: (large.layer_s.get(layer, 0.0) - small.layer_s.get(layer, 0.0)) / extra for layer in layers}
            if extra
            else {}
        )

    @property
    def wall_ratio(self) -> float | None:
        """Wall time without smoke jobs of the largest tenant over the smallest's (goal: at most 3)."""
        if len(self.points) < 2:
            return None
        small, large = min(self.points, key=lambda p: p.users), max(self.points, key=lambda p: p.users)
        return large.wall_without_smoke_s / small.wall_without_smoke_s if small.wall_without_smoke_s else None


def crowd(template: TenantContract, tag: str, users: int) -> TenantContract:
    """``template`` as bench tenant ``tenant-<tag>`` with ``users`` users ``u<n>-<tag>`` (the template's first user
    copied) and a GPU-minute budget that leaves each of them the template's share."""
    base = bench_tenant(template, tag)
    model = base.users[0]
    people = [
        model.model_copy(update={"username": f"u{n:03d}-{tag}", "email": f"u{n:03d}-{tag}@example.org"})
        for n in range(users)
    ]
    share = template.slurm.budget_gpu_minutes_total // len(template.users)
    slurm = base.slurm.model_copy(update={"budget_gpu_minutes_total": share * users})
    return base.model_copy(update={"users": people, "slurm": slurm})


async def users_curve(
    client: Client, lab: LabEndpoints, template: TenantContract, log: Path, sizes: tuple[int, ...] = SIZES
) -> UsersCurve:
    """One onboarding (then offboarding) per size, smallest first, on the production worker pointed at the lab."""
    tag = f"c{uuid.uuid4().hex[:4]}"
    points = []
    async with lab_worker(client, lab, log) as api:
        for users in sorted(sizes):
            contract = crowd(template, f"{tag}n{users}", users)
            try:
                durable = await durable_once(api, contract)
            finally:
                cleaned = (await offboard(api, contract)).status == RunOutcome.completed
            layers: dict[str, float] = {}
            for span in durable.spans:
                layer = span.name.partition(".")[0]
                layers[layer] = round(layers.get(layer, 0.0) + span.seconds, 3)
            points.append(
                UsersPoint(
                    users=users,
                    slug=contract.slug,
                    workflow_id=durable.run.workflow_id,
                    ok=durable.run.ok,
                    message=durable.run.message,
                    wall_s=durable.run.seconds,
                    smoke_s=sum(s.seconds for s in durable.spans if s.name in SMOKE_STEPS),
                    layer_s=layers,
                    retried=[f"{s.name} (attempt {s.attempt})" for s in durable.spans if s.attempt > 1],
                    cleaned_up=cleaned,
                )
            )
    return UsersCurve(points=points)
