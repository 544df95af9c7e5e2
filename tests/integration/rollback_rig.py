"""What the rollback and preflight tests share: per-case tenants, a worker that fails a chosen step, the checks.

:class:`FailStep` is a real Temporal worker interceptor: it makes one activity raise a
non-retryable ``ApplicationError`` either before its body runs or after it ran (a crash
after the writes, before the result is recorded), and, when asked, has every apply step
report success without running its body (nothing written, its facts passed on), so that a
run's saga holds every step while nothing of it exists. It notes each undo it sees. Clients
and servers stay real.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    Worker,
)

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.runbook import APPLY, ROLLBACK
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.registry import ACTIVITIES, WORKFLOWS
from tests.approvers import reviewer
from tests.integration.world import World, describe_diff
from tests.labfixture import lab_env
from tests.workflows.contract import example_tenant

INJECTED = "InjectedFailure"


def tenant(lab: LabEndpoints, tag: str) -> TenantContract:
    """The runbook's example tenant renamed to ``tenant-<tag>`` with users ``<name>-<tag>``: one per case."""
    base = example_tenant(f"tenant-{tag}")
    users = [
        u.model_copy(update={"username": f"{u.username}-{tag}", "email": f"{u.username}-{tag}@example.org"})
        for u in base.users
    ]
    return base.model_copy(update={"users": users, "slurm": base.slurm.model_copy(update={"team_account": None})})


APPLY_NAMES = frozenset(step.name for step in APPLY)
UNDO_NAMES = frozenset(step.name for step in ROLLBACK)


@dataclass
class Injection:
    """Which activity fails and when (``before`` its body or ``after`` it); empty means none. With
    ``skip_bodies``, every apply step reports success without running its body. ``undone``: each undo the worker
    ran, as ``<undo activity> <step>``."""

    activity: str = ""
    when: str = ""
    fired: int = 0
    skip_bodies: bool = False
    undone: list[str] = field(default_factory=list)

    def reset(self) -> None:
        """No failure, no skipped bodies, no undo seen: as made, for the next case (the worker holds this one)."""
        self.activity, self.when, self.fired, self.skip_bodies = "", "", 0, False
        self.undone.clear()

    def check(self, name: str, when: str) -> None:
        if name == self.activity and when == self.when:
            self.fired += 1
            raise ApplicationError(f"injected failure {when} {name}", type=INJECTED, non_retryable=True)


class _FailingActivity(ActivityInboundInterceptor):
    def __init__(self, nxt: ActivityInboundInterceptor, injection: Injection) -> None:
        super().__init__(nxt)
        self._injection = injection

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        name = activity.info().activity_type
        if name in UNDO_NAMES:
            (undo,) = input.args
            assert isinstance(undo, UndoInput)
            self._injection.undone.append(f"{name} {undo.step}")
        self._injection.check(name, "before")
        if self._injection.skip_bodies and name in APPLY_NAMES:
            (step_input,) = input.args
            assert isinstance(step_input, StepInput)
            return StepResult(facts=step_input.facts)
        result = await self.next.execute_activity(input)
        self._injection.check(name, "after")
        return result


class FailStep(Interceptor):
    def __init__(self, injection: Injection) -> None:
        self.injection = injection

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _FailingActivity(next, self.injection)


@asynccontextmanager
async def failing_worker(client: Client, lab: LabEndpoints, injection: Injection) -> AsyncIterator[TenantflowClient]:
    """Every workflow and activity on a private task queue, pointed at the lab, failing as ``injection`` says."""
    queue = f"rb-{uuid.uuid4().hex[:8]}"
    with lab_env(lab), ThreadPoolExecutor(max_workers=16) as pool:
        async with Worker(
            client,
            task_queue=queue,
            workflows=WORKFLOWS,
            activities=ACTIVITIES,
            activity_executor=pool,
            max_concurrent_activities=16,
            interceptors=[FailStep(injection)],
        ):
            yield TenantflowClient(client, queue)


async def start_approved(api: TenantflowClient, contract: TenantContract) -> WorkflowHandle[Any, Any]:
    handle = await api.start_onboarding(contract)
    status = await api.wait_for_plan(handle.id)
    assert status.plan_hash, status
    await reviewer(api).approve(handle.id, status.plan_hash)
    return handle


async def failure_of(handle: WorkflowHandle[Any, Any], timeout_s: float = 240) -> BaseException:
    """The cause of the run's failure (it must fail)."""
    try:
        await asyncio.wait_for(handle.result(), timeout_s)
    except WorkflowFailureError as err:
        assert err.cause is not None
        return err.cause
    raise AssertionError(f"{handle.id} did not fail")


def assert_world_restored(before: World, after: World, usernames: list[str]) -> None:
    """``after`` equals ``before`` except Authentik users the run created (and their LDAP entries): kept,
    inactive, in no group (runbook: deactivate, keep records)."""
    users = after["authentik"]["users"]
    new = [name for name in usernames if name in users and name not in before["authentik"]["users"]]
    kept_dns = set(after["ldap"])
    for name in new:
        assert users[name]["is_active"] is False, f"{name} was left active: {users[name]}"
        assert users[name]["groups"] == [], f"{name} was left in groups {users[name]['groups']}"
        assert not [g for g, group in after["authentik"]["groups"].items() if users[name]["pk"] in group["members"]]
        for dn, entry in after["ldap"].items():
            if dn.startswith(f"cn={name},ou=users,"):
                assert entry.get("ak-active") == ["FALSE"] and "memberOf" not in entry, f"{dn}: {entry}"
            if dn.startswith((f"cn={name},ou=users,", f"cn={name},ou=virtual-groups,")):
                kept_dns.discard(dn)
    kept = {
        **after,
        "authentik": {**after["authentik"], "users": {k: v for k, v in users.items() if k not in new}},
        "ldap": {dn: entry for dn, entry in after["ldap"].items() if dn in kept_dns},
    }
    assert kept == before, "the world differs from before the run:\n" + describe_diff(before, kept)
