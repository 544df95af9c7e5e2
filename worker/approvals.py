"""The four-eyes rule, enforced by the worker: the identity that started a run cannot approve its gates.

Temporal's SDK does not tell workflow code who sent an update, so the approver is the identity the caller
authenticated as, carried in the payload: the HTTP API puts its token's user there (and refuses any other
name), the CLI and the Python API the Temporal client's identity (:func:`worker.temporal.client_identity`).
The starter's identity travels the same way, in the run's memo ``started_by``
(:data:`models.gates.STARTED_BY_MEMO`), written by :class:`starter.client.TenantflowClient`.

:class:`FourEyes` is a worker interceptor: for the workflow types named in ``TENANTFLOW_FOUR_EYES`` it refuses,
in the update validator, an ``approve_plan`` or ``answer_gate`` whose approver is the run's starter, or any
approval of a run that does not record its starter. A refused update is never written to the history, so
turning the rule on or off changes no history and replays stay green.
"""

from __future__ import annotations

from collections.abc import Collection

from temporalio import workflow
from temporalio.worker import (
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from tenantflow.models.gates import STARTED_BY_MEMO, ApprovePlan, GateAnswer

APPROVALS = frozenset({"approve_plan", "answer_gate"})


def approver_of(args: Collection[object]) -> str | None:
    """The approver an ``approve_plan`` or ``answer_gate`` update names."""
    for arg in args:
        if isinstance(arg, ApprovePlan | GateAnswer):
            return arg.approver
    return None


def check_four_eyes(approver: str | None, started_by: str | None) -> None:
    """Raise when the approval breaks the four-eyes rule."""
    if started_by is None:
        raise ValueError(
            "four-eyes rule: this run does not record who started it (memo 'started_by'); "
            "start runs with tenantflow so that another person can approve them"
        )
    if approver is None or approver == started_by:
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

        class Inbound(WorkflowInboundInterceptor):
            def handle_update_validator(self, input: HandleUpdateInput) -> None:
                if input.update in APPROVALS and workflow.info().workflow_type in guarded:
                    started_by = workflow.memo_value(STARTED_BY_MEMO, None, type_hint=str)
                    check_four_eyes(approver_of(input.args), started_by)
                super().handle_update_validator(input)

        return Inbound
