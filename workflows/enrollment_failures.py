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
runs recorded before it replay unchanged.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.enrollment_workflows import Cordon, EnrollmentInput, EnrollmentStep
    from tenantflow.models.plan import Action, Plan
    from tenantflow.models.results import EnsureResult, Finding, Outcome
    from tenantflow.models.rollback import Leftover
    from tenantflow.models.runbook import HUB_CORDON, HUB_DESTROY_KEY, HUB_REMOVE_ENROLLMENT, WORKER_UNINSTALL, Step

from tenantflow.workflows.rollback import RETRY_ROLLBACK, RetryRollbackGate
from tenantflow.workflows.saga import root_message

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


Removal = tuple[Step[EnrollmentStep, object], list[EnsureResult]]
"""A removal step of the compensation and the objects it removes."""


class EnrollmentFailures(RetryRollbackGate):
    _params: EnrollmentInput
    _step: EnrollmentStep
    _live: str | None = None
    """None until the worker is uncordoned, then ``uncordoned`` or ``canary passed``."""

    def _with(self, step: EnrollmentStep, **facts: object) -> EnrollmentStep:
        return step.model_copy(update={"facts": step.facts.model_copy(update=facts)})

    def _gate_times(self) -> tuple[timedelta, timedelta]:
        return (
            timedelta(seconds=self._params.gate_escalate_after_s),
            timedelta(seconds=self._params.gate_expire_after_s),
        )

    def _cancel_compensates(self) -> bool:
        return workflow.patched(CANCEL_PATCH)

    async def _after_failure(self, plan: Plan, err: BaseException) -> None:
        if self._live is not None and workflow.patched(KEEP_LIVE_PATCH):
            await self._keep_enrolled(err)
        else:
            await self._compensate(plan, err)

    async def _keep_enrolled(self, err: BaseException) -> None:
        """The worker may run work: cordon it again unless its canary passed, and say what to do."""
        c = self._step.contract
        why = root_message(err) or type(err).__name__
        decommission = f"tenantflow decommission {c.tenant_namespace} {c.worker_name}"
        if self._live == CANARY_PASSED:
            todo = (
                "the worker is enrolled, dispatch-ready and passed its canary: resume the organization's "
                "submission paths; nothing was torn down"
            )
            commands = [decommission]
            fix = f"{todo} (or decommission it ({decommission}))"
        else:
            await self._steps.run(
                HUB_CORDON,
                Cordon(contract=c, cordoned=True, reason=f"enrollment stopped: {why}"[:200]),
                summary="cordon again",
            )
            uncordon = (
                f"kubectl --context HUB -n {c.tenant_namespace} patch workercluster {c.worker_name} --type merge "
                f'-p \'{{"spec":{{"cordoned":false}}}}\''
            )
            todo = "the worker stays enrolled and cordoned: fix the cause, then uncordon it, or decommission it"
            commands = [uncordon, decommission]
            fix = (
                f"the worker stays enrolled and cordoned: fix the cause, then uncordon it ({uncordon}) "
                f"or decommission it ({decommission})"
            )
        self._findings.append(
            Finding(
                check="enrollment.stopped",
                ok=False,
                fix=fix,
                message=f"stopped after the worker was {self._live}: {why}; the worker was not torn down",
            )
        )
        headline = f"Stopped, `{c.worker_name}` left enrolled: {todo}"
        self._gates.set_stage("stopped-enrolled", self._gates.details(headline, commands, "What to run:"))

    async def _compensate(self, plan: Plan, err: BaseException) -> None:
        """Remove every object the plan created (whatever bootstrap got to), the key and the enrollment record."""
        self._gates.set_stage("compensating", f"Removing what this run installed after: {err}")
        planned = [
            EnsureResult(layer=s.layer, kind=s.kind, name=s.name, namespace=s.namespace, outcome=Outcome.created)
            for s in plan.steps
            if s.layer == "worker" and s.action == Action.create
        ]
        step = self._with(self._step, installed=planned)
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
        removals: list[Removal] = [(HUB_DESTROY_KEY, key), (WORKER_UNINSTALL, planned), (HUB_REMOVE_ENROLLMENT, hub)]
        if not workflow.patched(CONTINUE_PATCH):
            for activity, _ in removals:
                await self._steps.run(activity, step)
        else:
            failed = await self._remove_each(step, removals)
            while failed and workflow.patched(RETRY_PATCH):
                left = "; ".join(item.describe() for item in self._leftovers)
                try:
                    await self._wait_gate(
                        RETRY_ROLLBACK,
                        f"{len(self._leftovers)} objects left by a failed removal: {left}",
                        *self._gate_times(),
                    )
                except ApplicationError:
                    break
                self._gates.set_stage("compensating", "Retrying the failed removals")
                failed = await self._remove_each(step, failed)
            if failed:
                left = "; ".join(item.describe() for item in self._leftovers)
                self._gates.set_stage("rollback-incomplete", f"Rollback incomplete after: {err}; left: {left}")
                raise ApplicationError(
                    f"rollback incomplete, objects left: {left}",
                    *[item.model_dump(mode="json") for item in self._leftovers],
                    type="RollbackIncomplete",
                    non_retryable=True,
                ) from err
        self._gates.set_stage("rolled-back", f"Rolled back after: {err}")

    async def _remove_each(self, step: EnrollmentStep, removals: list[Removal]) -> list[Removal]:
        """Run every removal even when one fails; the failed ones, their objects in ``status`` leftovers."""
        self._leftovers = []
        failed: list[Removal] = []
        for activity, objects in removals:
            try:
                await self._steps.run(activity, step)
            except Exception as exc:  # one failed removal must not stop the others
                failed.append((activity, objects))
                self._leftovers += [
                    Leftover(
                        layer=o.layer,
                        kind=o.kind,
                        name=o.name,
                        namespace=o.namespace,
                        step=activity.name,
                        why=root_message(exc),
                    )
                    for o in objects
                ]
        return failed
