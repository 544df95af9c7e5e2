"""What ``WorkerEnrollment`` does when it fails, expires or is cancelled: roll back, or leave a live worker enrolled.

Before the worker is uncordoned, a failure or a cancel removes what the run
installed (every planned create, whatever bootstrap got to), the signing key and
the enrollment record; each of the three runs even when an earlier one failed,
and what a failed one left is listed in ``status`` (``leftovers``); the run then
waits at ``retry_rollback``, which runs the failed removals again, and ends with
``RollbackIncomplete`` (the leftovers as details) if the gate expires. Once the
worker is uncordoned it may run work: a later failure, an expired gate or a
cancel cordons it again (unless its canary passed) and ends leaving it enrolled,
with a finding saying what to do. Each change is guarded by its own patch, so
runs recorded before it replay unchanged. The removals are the steps of a
:class:`~tenantflow.workflows.saga.Saga`, in the order they run, retried at
``retry_rollback`` by the :class:`~tenantflow.workflows.rollback.Rollback` the tenant runs use.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_steps import HUB_CORDON, HUB_DESTROY_KEY, HUB_REMOVE_ENROLLMENT, WORKER_UNINSTALL
    from tenantflow.models.enrollment_workflows import Cordon, EnrollmentStep
    from tenantflow.models.plan import Action, Plan
    from tenantflow.models.results import EnsureResult, Finding, Outcome

from tenantflow.workflows.rollback import Rollback
from tenantflow.workflows.run_state import RunState
from tenantflow.workflows.saga import Entry, Saga, root_message

KEEP_LIVE_PATCH = "enrollment-keeps-live-worker"
CANCEL_PATCH = "enrollment-cancel-compensates"
CONTINUE_PATCH = "enrollment-rollback-continues"
RETRY_PATCH = "enrollment-retry-rollback"
CANARY_PASSED = "canary passed"


def application_error(err: BaseException | None) -> ApplicationError | None:
    """The first ApplicationError with a type in ``err``'s cause chain (an activity failure wraps it)."""
    while err is not None:
        if isinstance(err, ApplicationError) and err.type:
            return err
        err = err.__cause__
    return None


def with_facts(step: EnrollmentStep, **facts: object) -> EnrollmentStep:
    """``step`` with some of its facts replaced."""
    return step.model_copy(update={"facts": step.facts.model_copy(update=facts)})


class EnrollmentFailures:
    """What an enrollment does after a failure: roll back what it installed, or keep a live worker enrolled."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.rollback = Rollback(state)

    async def after_failure(
        self,
        step: EnrollmentStep,
        live: str | None,
        plan: Plan,
        err: BaseException,
        escalate_after: timedelta,
        expire_after: timedelta,
    ) -> None:
        """``live``: None until the worker is uncordoned, then ``uncordoned`` or ``canary passed``."""
        if live is not None and workflow.patched(KEEP_LIVE_PATCH):
            await self.keep_enrolled(step, live, err)
        else:
            await self.compensate(step, plan, err, escalate_after, expire_after)

    async def keep_enrolled(self, step: EnrollmentStep, live: str, err: BaseException) -> None:
        """The worker may run work: cordon it again unless its canary passed, and say what to do."""
        c = step.contract
        why = root_message(err) or type(err).__name__
        decommission = f"tenantflow decommission {c.tenant_namespace} {c.worker_name}"
        if live == CANARY_PASSED:
            todo = (
                "the worker is enrolled, dispatch-ready and passed its canary: resume the organization's "
                "submission paths; nothing was torn down"
            )
            commands = [decommission]
            fix = f"{todo} (or decommission it ({decommission}))"
        else:
            await self.state.steps.run(
                HUB_CORDON,
                Cordon(contract=c, cordoned=True, reason=f"enrollment stopped: {why}"[:200]),
                summary="cordon again",
            )
            uncordon = f"konduktor --context HUB cluster cordon {c.worker_name} -n {c.tenant_namespace} --uncordon"
            todo = "the worker stays enrolled and cordoned: fix the cause, then uncordon it, or decommission it"
            commands = [uncordon, decommission]
            fix = (
                f"the worker stays enrolled and cordoned: fix the cause, then uncordon it ({uncordon}) "
                f"or decommission it ({decommission})"
            )
        said = f"stopped after the worker was {live}: {why}; the worker was not torn down"
        self.state.findings.append(Finding.failed("enrollment.stopped", said, fix))
        headline = f"Stopped, `{c.worker_name}` left enrolled: {todo}"
        self.state.gates.set_stage("stopped-enrolled", self.state.gates.details(headline, commands, "What to run:"))

    async def compensate(
        self, step: EnrollmentStep, plan: Plan, err: BaseException, escalate_after: timedelta, expire_after: timedelta
    ) -> None:
        """Remove every object the plan created (whatever bootstrap got to), the key and the enrollment record."""
        gates = self.state.gates
        gates.set_stage("compensating", f"Removing what this run installed after: {err}")
        planned = [
            EnsureResult(layer=s.layer, kind=s.kind, name=s.name, namespace=s.namespace, outcome=Outcome.created)
            for s in plan.steps
            if s.layer == "worker" and s.action == Action.create
        ]
        step = with_facts(step, installed=planned)
        c = step.contract
        hub = [
            EnsureResult(
                layer="hub", kind=kind, name=c.worker_name, namespace=c.tenant_namespace, outcome=Outcome.created
            )
            for kind in ("WorkerCluster", "BootstrapEnrollment")
        ]
        key = (
            [
                EnsureResult(
                    layer="hub",
                    kind="Secret",
                    name=step.facts.key_secret,
                    namespace=c.tenant_namespace,
                    outcome=Outcome.created,
                )
            ]
            if step.facts.key_secret
            else []
        )
        saga = Saga(order=list)
        saga.add(HUB_DESTROY_KEY, key)
        saga.add(WORKER_UNINSTALL, planned)
        saga.add(HUB_REMOVE_ENROLLMENT, hub)

        async def remove(entry: Entry) -> list[EnsureResult]:
            await self.state.steps.run(entry[0], step)
            return []

        if not workflow.patched(CONTINUE_PATCH):
            for entry in saga.ordered():
                await remove(entry)
        else:
            await self.rollback.undo_until_done(
                saga,
                remove,
                what="removal",
                retrying=("compensating", "Retrying the failed removals"),
                retry=lambda: workflow.patched(RETRY_PATCH),
                escalate_after=escalate_after,
                expire_after=expire_after,
            )
            if saga:
                gates.set_stage(
                    "rollback-incomplete", f"Rollback incomplete after: {err}; left: {self.rollback.left()}"
                )
                raise self.rollback.incomplete() from err
        gates.set_stage("rolled-back", f"Rolled back after: {err}")
