"""The four-eyes rule, enforced by the worker: the identity that started a run cannot approve its gates.

Temporal's SDK does not tell workflow code who sent an update, so the approver is the identity the caller
authenticated as, carried in the payload: the HTTP API puts its token's user there (and refuses any other
name), the CLI and the Python API the Temporal client's identity (:func:`worker.temporal.client_identity`).
The starter's identity travels the same way, in the run's memo ``started_by``
(:data:`models.gates.STARTED_BY_MEMO`), written by :class:`starter.client.TenantflowClient`.

:class:`FourEyes` is a worker interceptor: for the workflow types named in ``TENANTFLOW_FOUR_EYES`` it refuses,
in the update validator, every gate answer (``approve_plan``, each yes/no gate's update of its own name such as
``confirm_purge`` or ``retry_rollback``, and the older ``answer_gate``: any update carrying an
:class:`ApprovePlan` or :class:`GateAnswer`) whose approver is the run's starter, or any approval of a run that
does not record its starter. A refused update is never written to the history, so turning the rule on or off
changes no history and replays stay green. The signal forms (``approve_plan_signal``, ``<gate>_signal``) cannot be
refused; the same rule makes the workflow ignore them, with a warning. A signal is in the history, so a run that
received a signal from its starter must not change between a worker with the rule and one without: change
``TENANTFLOW_FOUR_EYES`` only while no such run is open.
"""

from __future__ import annotations

from collections.abc import Collection

from temporalio import workflow
from temporalio.worker import (
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from tenantflow.models.gates import STARTED_BY_MEMO, ApprovePlan, GateAnswer


def approval_in(args: Collection[object]) -> ApprovePlan | GateAnswer | None:
    """The gate answer an update or signal carries (None: not a gate answer, e.g. ``reject_plan``)."""
    for arg in args:
        if isinstance(arg, ApprovePlan | GateAnswer):
            return arg
    return None


def check_four_eyes(approver: str, started_by: str | None) -> None:
    """Raise when the approval breaks the four-eyes rule."""
    if started_by is None:
        raise ValueError(
            "four-eyes rule: this run does not record who started it (memo 'started_by'); "
            "start runs with tenantflow so that another person can approve them"
        )
    if approver == started_by:
        raise ValueError(
            f"four-eyes rule: {started_by!r} started this run and cannot approve it; another person must approve"
        )


class FourEyes(Interceptor):
    """Refuse approvals by the starter of runs of ``workflow_types``."""

    def __init__(self, workflow_types: Collection[str]) -> None:
        self.workflow_types = frozenset(workflow_types)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        guarded = self.workflow_types
        if not guarded:
            return None

        def check(args: Collection[object]) -> None:
            approval = approval_in(args)
            if approval is not None and workflow.info().workflow_type in guarded:
                check_four_eyes(approval.approver, workflow.memo_value(STARTED_BY_MEMO, None, type_hint=str))

        class Inbound(WorkflowInboundInterceptor):
            def handle_update_validator(self, input: HandleUpdateInput) -> None:
                check(input.args)
                super().handle_update_validator(input)

            async def handle_signal(self, input: HandleSignalInput) -> None:
                try:
                    check(input.args)
                except ValueError as refused:
                    workflow.logger.warning("ignored signal %s: %s", input.signal, refused)
                    return
                await super().handle_signal(input)

        return Inbound
