"""The HTTP API's routes on runs of any kind (status, result, gates, cancel, the list) and of a worker cluster's life
in the Hub (enroll, decommission).

A run is addressed by its workflow id (``tenant/<slug>``, ``enroll/<ns>/<worker>``, ...), slashes and all, which
names the tenant or worker cluster whose roles it needs (:mod:`starter.api_auth`). Gates
are answered by the token's user; the run's own validator refuses a stale plan hash, a gate that is not open, or
(four-eyes) the user who started it, and the API answers 409 with its words.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import Field, ValidationError, field_validator
from temporalio.client import WorkflowExecution, WorkflowExecutionStatus, WorkflowFailureError

from tenantflow.models.api import (
    CancelRequested,
    DecommissionRequest,
    GateAnswered,
    RunPath,
    RunResult,
    RunsQuery,
    RunSummary,
    WorkerPath,
)
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import EnrollmentInput
from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan, SmokeFailedAnswer
from tenantflow.models.run_ids import enrollment_id, lifecycle_id
from tenantflow.starter.api_answers import answered_by_token_user, as_token_user
from tenantflow.starter.api_auth import authorize, may_view
from tenantflow.starter.api_requests import body_as, client_of, path_as, query_as, start_input, started, user_of
from tenantflow.starter.contracts import refuse_kubeconfig_paths
from tenantflow.starter.failures import explain
from tenantflow.starter.problems import ApiProblem, invalid, or_404
from tenantflow.starter.run_kinds import RUNS, YES_NO_GATES
from tenantflow.worker.targets import target_of_run, worker_cluster
from tenantflow.worker.tokens import Role
from tenantflow.workflows.search import STAGE
from tenantflow.workflows.smoke_gate import SMOKE_FAILED

APPROVE_BODY = answered_by_token_user(ApprovePlan)
REJECT_BODY = answered_by_token_user(RejectPlan)
GATE_BODY = answered_by_token_user(GateAnswer)
SMOKE_BODY = answered_by_token_user(SmokeFailedAnswer)


class GatePath(RunPath):
    """The path of ``POST /runs/{id}/gates/{gate}``: a yes/no gate (``approve_plan``, ``reject_plan``,
    ``smoke_failed``: own routes)."""

    gate: str = Field(..., description="the gate to say yes at", json_schema_extra={"enum": list(YES_NO_GATES)})

    @field_validator("gate")
    @classmethod
    def _yes_no(cls, gate: str) -> str:
        if gate not in YES_NO_GATES:
            raise ValueError(
                f"no yes/no gate {gate!r}: answer one of {', '.join(YES_NO_GATES)} here, approve_plan, "
                "reject_plan and smoke_failed at their own routes"
            )
        return gate


def run_id_of(request: web.Request) -> str:
    return path_as(request, RunPath).id


def json_of(model: Any, status: int = 200) -> web.Response:
    return web.json_response(text=model.model_dump_json(), status=status)


async def run_status(request: web.Request) -> web.Response:
    """The run's status: stage, plan and its hash, open gates and how to answer them, steps, findings."""
    return json_of(await client_of(request).status(run_id_of(request)))


def failure_text(exc: BaseException) -> str:
    """Every cause of a failed run, outermost first (``Activity task failed: SmokeFailed: ...``)."""
    messages: list[str] = []
    cause: BaseException | None = exc.__cause__ if isinstance(exc, WorkflowFailureError) else exc
    while cause is not None:
        messages.append(getattr(cause, "message", None) or str(cause) or type(cause).__name__)
        cause = cause.__cause__
    return ": ".join(messages)


async def run_result(request: web.Request) -> web.Response:
    """How the run ended: its result (an onboarding's includes the handover sheet), or why it did not complete.

    409 while the run is still in progress (poll `GET /runs/{id}` for its stage).
    """
    api, workflow_id = client_of(request), run_id_of(request)
    described = await api.handle(workflow_id).describe()
    status = described.status
    if status == WorkflowExecutionStatus.RUNNING:
        current = await api.status(workflow_id)
        raise ApiProblem(409, f"{workflow_id} is still in progress (stage {current.stage}); poll GET /runs/{{id}}")
    if described.workflow_type not in RUNS:
        raise ApiProblem(
            404, f"{workflow_id} is a {described.workflow_type} run; results are reported of: {', '.join(sorted(RUNS))}"
        )
    answer = RunResult(
        workflow_id=workflow_id,
        workflow_type=described.workflow_type,
        status=status.name if status is not None else "UNSPECIFIED",
    )
    try:
        answer = answer.model_copy(update={"result": await api.result(workflow_id)})
    except WorkflowFailureError as exc:
        stage = described.typed_search_attributes.get(STAGE) or ""
        answer = answer.model_copy(update={"failure": failure_text(exc), "explanation": explain(exc, stage)})
    return json_of(answer)


async def cancel_run(request: web.Request) -> web.Response:
    """Cancel the run (`tenantflow cancel`): what it applied is rolled back in the runbook's order. A tenant's
    lifecycle needs admin: cancelling it ends the watch over the term, so the tenant would never expire."""
    workflow_id = run_id_of(request)
    target = target_of_run(workflow_id)
    if target.kind == "tenant" and workflow_id == lifecycle_id(target.name):
        authorize(request, Role.admin, target)
    await client_of(request).cancel(workflow_id)
    return json_of(CancelRequested(workflow_id=workflow_id, answer=f"cancel requested for {workflow_id}"), 202)


def gate_answered(request: web.Request, gate: str, answer: str) -> web.Response:
    return json_of(GateAnswered(workflow_id=run_id_of(request), gate=gate, answer=answer))


async def approve_plan(request: web.Request) -> web.Response:
    """Approve the run's published plan by its exact hash (`tenantflow approve`), as the token's user."""
    approval = await as_token_user(request, APPROVE_BODY, ApprovePlan)
    api, workflow_id = client_of(request), run_id_of(request)
    answer = await api.approve(workflow_id, approval.plan_hash, approval.comment, on_behalf_of=approval.approver)
    return gate_answered(request, "approve_plan", answer)


async def reject_plan(request: web.Request) -> web.Response:
    """Reject the run's published plan (`tenantflow reject`): the run ends, nothing is written."""
    rejection = await as_token_user(request, REJECT_BODY, RejectPlan)
    answer = await client_of(request).reject(run_id_of(request), rejection.reason, on_behalf_of=rejection.approver)
    return gate_answered(request, "reject_plan", answer)


async def answer_gate(request: web.Request) -> web.Response:
    """Say yes at one of the run's yes/no gates (`tenantflow confirm-purge`, `uncordon`, `retry-rollback`, ...)."""
    gate = path_as(request, GatePath).gate
    yes = await as_token_user(request, GATE_BODY, GateAnswer)
    answer = await client_of(request).answer_gate(run_id_of(request), gate, yes.comment, on_behalf_of=yes.approver)
    return gate_answered(request, gate, answer)


async def smoke_failed(request: web.Request) -> web.Response:
    """Answer an onboarding that waits at smoke_failed (`tenantflow smoke-failed`), as the token's user: `rerun` the
    smoke checks once the node or chart is fixed, `rollback` the tenant, or `waive` the failures (`comment`: the
    reason, needed; the handover sheet records it)."""
    try:
        answer = await as_token_user(request, SMOKE_BODY, SmokeFailedAnswer)
    except ValidationError as exc:
        raise invalid("request body", exc) from None
    api, workflow_id = client_of(request), run_id_of(request)
    said = await api.answer_smoke_failed(
        workflow_id, answer.choice, answer.comment, on_behalf_of=answer.approver, opened_at=answer.opened_at
    )
    return gate_answered(request, SMOKE_FAILED, said)


def quoted(value: str) -> str:
    """A value in a visibility query (validated against a pattern without quotes first)."""
    return f"'{value}'"


async def list_runs(request: web.Request) -> web.Response:
    """The runs the token may view, newest first, filtered by tenant, worker cluster, stage or whether they are in
    progress."""
    query = query_as(request, RunsQuery)
    clauses = [
        f"TenantSlug = {quoted(query.tenant)}" if query.tenant else "",
        f"WorkerCluster = {quoted(query.worker)}" if query.worker else "",
        f"Stage = {quoted(query.stage)}" if query.stage else "",
        "ExecutionStatus = 'Running'" if query.running else "",
    ]

    def viewable(execution: WorkflowExecution) -> bool:
        return may_view(request, target_of_run(execution.id))

    found = await client_of(request).list_runs(" AND ".join(c for c in clauses if c), query.limit, keep=viewable)
    rows = [
        RunSummary(
            id=run.id,
            type=run.workflow_type,
            status=run.status.name if run.status else "",
            stage=run.typed_search_attributes.get(STAGE) or "",
            started=run.start_time,
            closed=run.close_time,
        ).model_dump(mode="json")
        for run in found
    ]
    return web.json_response(rows)


async def start_enrollment(request: web.Request) -> web.Response:
    """Start enrolling a worker cluster into the Hub (`tenantflow enroll`).

    The body is a WorkerEnrollment, or an EnrollmentInput (`{"contract": {...}, ...}`); the run is
    `enroll/<namespace>/<worker>`, with its yes/no gates answered at `POST /runs/{id}/gates/{gate}`.
    """
    params, options = await start_input(request, EnrollmentInput)
    authorize(request, Role.requester, worker_cluster(params.contract.tenant_namespace, params.contract.worker_name))
    return started(await client_of(request).start_enrollment(params.contract, on_behalf_of=user_of(request), **options))


async def enrolled_contract(request: web.Request, namespace: str, worker: str) -> WorkerEnrollment:
    """The contract of the latest enrollment run of ``namespace/worker``; 404 when Temporal no longer has it."""
    missing = f"no run {enrollment_id(namespace, worker)} in Temporal's history: send the contract as `contract`"
    return await or_404(client_of(request).enrolled_contract(namespace, worker), missing)


async def start_decommission(request: web.Request) -> web.Response:
    """Start decommissioning a worker cluster (`tenantflow decommission`): cordon, drain, Hub removal, a gated
    reset."""
    where = path_as(request, WorkerPath)
    body = await body_as(request, DecommissionRequest)
    contract = body.contract or await enrolled_contract(request, where.namespace, where.worker)
    if (contract.tenant_namespace, contract.worker_name) != (where.namespace, where.worker):
        raise ApiProblem(
            422,
            f"contract.tenant_namespace, contract.worker_name: the contract is of {contract.tenant_namespace}/"
            f"{contract.worker_name}, not {where.namespace}/{where.worker}; send the contract of that worker",
            ["contract.tenant_namespace", "contract.worker_name"],
        )
    refuse_kubeconfig_paths(contract, "request body: contract")
    return started(await client_of(request).start_decommission(contract, on_behalf_of=user_of(request)))
