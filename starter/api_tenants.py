"""The HTTP API's routes of a tenant's life: onboard, change, offboard, its term and its renewal; and the reads the
worker runs for it: the tenants recorded in a cluster, a tenant's handover sheet and its drift (the read-only
``TenantRecords`` and ``TenantDrift`` workflows, with the worker's credentials: this server needs only Temporal).

Each needs a role over the tenant (:mod:`starter.api_auth`): an onboarding's tenant is its contract's slug,
checked once the body is read. Each start is recorded as started by the token's user (the four-eyes rule compares
approvers with it) and answers 201 with the run's ids; a contract is validated, naming each field and its fix,
before anything starts.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from aiohttp import web
from temporalio.client import WorkflowFailureError

from tenantflow.models.api import ClusterQuery, OffboardRequest, TenantClusterQuery, TenantPath, TenantSummary
from tenantflow.models.change import slug_refusal
from tenantflow.models.drift import DriftReport, FleetDriftInput
from tenantflow.models.lifecycle import RenewTerm, renew_days_problem
from tenantflow.models.onboarding import OnboardingInput, OnboardingResult
from tenantflow.models.records import RecordStatus, TenantRecord
from tenantflow.models.run_ids import lifecycle_id, onboarding_id
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.api_answers import answered_by_token_user, as_token_user
from tenantflow.starter.api_auth import authorize, may_view
from tenantflow.starter.api_requests import body_as, client_of, path_as, query_as, start_input, started, user_of
from tenantflow.starter.contracts import refuse_kubeconfig_paths
from tenantflow.starter.drift import check_on_worker
from tenantflow.starter.failures import explain
from tenantflow.starter.problems import ApiProblem, or_404
from tenantflow.starter.records import read_on_worker, recorded_result, tenant_on_worker
from tenantflow.worker.targets import tenant
from tenantflow.worker.tokens import Role

RENEW_BODY = answered_by_token_user(RenewTerm)
T = TypeVar("T")


async def start_onboarding(request: web.Request) -> web.Response:
    """Start onboarding a tenant.

    The body is a TenantContract, or an OnboardingInput (`{"contract": {...}, "approval_escalate_after_s": ...}`).
    The run is `tenant/<slug>`; it plans, then waits at its `approve_plan` gate (`GET /runs/{id}` shows the plan
    and its hash).
    """
    params, options = await start_input(request, OnboardingInput)
    authorize(request, Role.requester, tenant(params.contract.slug))
    return started(await client_of(request).start_onboarding(params.contract, on_behalf_of=user_of(request), **options))


async def start_change(request: web.Request) -> web.Response:
    """Change an onboarded tenant to a new contract (`tenantflow apply`).

    The body is the new TenantContract; its slug is the path's (a tenant cannot be renamed). The tenant's record in
    the contract's cluster, read by the worker, gives the contract it changes from; the plan of creates, updates and
    removals waits at the `approve_plan` gate of `tenant/<slug>`.
    """
    slug = path_as(request, TenantPath).slug
    contract = await body_as(request, TenantContract)
    refusal = slug_refusal(slug, contract)
    if refusal:
        raise ApiProblem(422, refusal, ["slug"])
    refuse_kubeconfig_paths(contract, "request body")
    api = client_of(request)
    record = await read_by_worker(tenant_on_worker(api, contract.cluster, contract.slug), "cluster.context")
    if record is None or record.status is not RecordStatus.onboarded:
        raise ApiProblem(
            404, f"{contract.slug} is not an onboarded tenant of {contract.cluster.describe()}; onboard it first"
        )
    return started(await api.start_change(contract, record.contract, on_behalf_of=user_of(request)))


async def recorded_contract(request: web.Request, slug: str) -> TenantContract:
    """The contract of ``slug``'s record, read by the worker in the cluster of ``?cluster=``, else in the cluster its
    latest onboarding (or change) run named; else that run's own input (404 when Temporal no longer has the run)."""
    api, named = client_of(request), query_as(request, TenantClusterQuery).cluster
    missing = (
        f"no run {onboarding_id(slug)} in Temporal's history: send the tenant's contract as `contract` (or name the "
        "cluster holding its record as `cluster`)"
    )
    latest: TenantContract | None = None
    if named is None:
        latest = await or_404(api.onboarded_contract(slug), missing)
        cluster, field = latest.cluster, None
    else:
        cluster, field = KubeTarget(context=named), "cluster"
    record = await read_by_worker(tenant_on_worker(api, cluster, slug), field)
    if record is not None:
        return record.contract
    if latest is not None:
        return latest
    latest = await or_404(api.onboarded_contract(slug), missing)
    if latest.cluster.context != named:
        raise ApiProblem(
            404,
            f"cluster: {named} holds no record of {slug}, and its latest run {onboarding_id(slug)} is of "
            f"{latest.cluster.context}: name that cluster, or send the tenant's contract as `contract`",
            ["cluster"],
        )
    return latest


async def start_offboarding(request: web.Request) -> web.Response:
    """Start offboarding a tenant (`tenantflow offboard`).

    A teardown in rollback order, planned and gated at `approve_plan` like the onboarding (`offboard/<slug>`);
    the tenant's data is kept unless `purge_data`, which also waits for `confirm_purge`. Without `contract`, the
    contract is that of the tenant's record, read by the worker in the cluster `?cluster=` names (default: that of
    the tenant's latest onboarding or change run), else that run's input.
    """
    slug = path_as(request, TenantPath).slug
    body = await body_as(request, OffboardRequest)
    contract = body.contract or await recorded_contract(request, slug)
    if contract.slug != slug:
        raise ApiProblem(
            422, f"contract.slug: is {contract.slug}, not {slug}; send the contract of {slug}", ["contract.slug"]
        )
    refuse_kubeconfig_paths(contract, "request body: contract")
    return started(await client_of(request).start_offboarding(contract, body.purge_data, on_behalf_of=user_of(request)))


def no_lifecycle(slug: str) -> ApiProblem:
    return ApiProblem(404, f"{slug} has no lifecycle ({lifecycle_id(slug)}): its onboarding has not completed")


async def tenant_term(request: web.Request) -> web.Response:
    """Where the tenant's term stands: its end, reminders, renewals (the lifecycle's `term` query)."""
    slug = path_as(request, TenantPath).slug
    term = await client_of(request).term(slug)
    if term is None:
        raise no_lifecycle(slug)
    return web.json_response(text=term.model_dump_json())


async def renew_term(request: web.Request) -> web.Response:
    """Extend the tenant's term by `days` (`tenantflow renew`), renewed by the token's user."""
    api, slug = client_of(request), path_as(request, TenantPath).slug
    renewal = await as_token_user(request, RENEW_BODY, RenewTerm)
    bad_days = renew_days_problem(renewal.days)
    if bad_days:
        raise ApiProblem(422, bad_days, ["days"])
    current = await api.term(slug)
    if current is None:
        raise no_lifecycle(slug)
    if current.stage != "term:running":
        raise ApiProblem(409, f"the term of {slug} ended ({current.stage}): onboard it again to start a new term")
    term = await api.renew(slug, renewal.days, renewal.comment, on_behalf_of=user_of(request))
    return web.json_response(text=term.model_dump_json())


async def read_by_worker(pending: Awaitable[T], field: str | None = "cluster") -> T:
    """A read the worker runs (``TenantRecords``, ``TenantDrift``); a cluster its registry does not know is 422
    naming ``field``, the request's field that named it (none: a run's contract named it, and the failure is the
    worker's, 502), any other failure 502 naming the step and the error."""
    try:
        return await pending
    except WorkflowFailureError as exc:
        failure = explain(exc)
        if failure.error_type == "UnknownCluster" and field is not None:
            raise ApiProblem(422, f"{field}: {failure.message}", [field]) from None
        raise ApiProblem(502, f"the worker could not read: {failure.error_type}: {failure.message}") from None


async def tenant_cluster(request: web.Request, slug: str) -> KubeTarget:
    """The cluster of the query, else that of the tenant's latest onboarding run (404 when Temporal has none)."""
    query = query_as(request, TenantClusterQuery)
    if query.cluster is not None:
        return KubeTarget(context=query.cluster)
    missing = f"no run {onboarding_id(slug)} in Temporal's history: name the records' cluster as `cluster`"
    return (await or_404(client_of(request).onboarded_contract(slug), missing)).cluster


async def onboarded_record(request: web.Request, slug: str) -> TenantRecord | None:
    """``slug``'s current record, read by the worker; None when there is none; 409 when it is not onboarded."""
    cluster = await tenant_cluster(request, slug)
    found = await read_by_worker(read_on_worker(client_of(request), cluster, slug))
    if not found:
        return None
    record = found[0].record
    if record.status is not RecordStatus.onboarded:
        raise ApiProblem(
            409, f"{slug} was {record.status.value} by {record.run.workflow_id}: it is no longer an onboarded tenant"
        )
    return record


async def list_tenants(request: web.Request) -> web.Response:
    """The tenants recorded in a cluster (`tenantflow tenants`), read by the worker: each one's current record.

    Only the tenants the token may view are listed; each one's term is at `GET /tenants/{slug}/term`.
    """
    cluster = KubeTarget(context=query_as(request, ClusterQuery).cluster)
    found = await read_by_worker(read_on_worker(client_of(request), cluster))
    rows = [TenantSummary.of(r) for r in found if may_view(request, tenant(r.record.contract.slug))]
    return web.json_response([row.model_dump(mode="json") for row in rows])


async def tenant_handover(request: web.Request) -> web.Response:
    """The tenant's handover sheet (`tenantflow handover`): from its record (read by the worker), else from its
    finished onboarding run."""
    api, slug = client_of(request), path_as(request, TenantPath).slug
    record = await onboarded_record(request, slug)
    if record is not None:
        return web.json_response(text=recorded_result(record).model_dump_json())
    workflow_id = onboarding_id(slug)
    if await api.running(workflow_id):
        raise ApiProblem(409, f"{workflow_id} has not finished: its handover sheet comes when it completes")
    finished = await api.result(workflow_id)
    if not isinstance(finished, OnboardingResult) or finished.handover is None:
        raise ApiProblem(404, f"{slug} has no record and its onboarding {workflow_id} did not complete")
    return web.json_response(text=finished.model_dump_json())


async def tenant_drift(request: web.Request) -> web.Response:
    """How the tenant differs from its recorded contract (`tenantflow drift SLUG`), checked by the worker.

    The worker reads the tenant's record and runs the read-only drift check (`TenantDrift`, `drift/<nonce>`): every
    object that is missing, changed or extra. Nothing is written; repair is an onboarding through its plan gate.
    """
    api, slug = client_of(request), path_as(request, TenantPath).slug
    cluster = await tenant_cluster(request, slug)
    if await onboarded_record(request, slug) is None:
        raise ApiProblem(404, f"no record of {slug} in {cluster.describe()}: nothing to check")
    report = await read_by_worker(check_on_worker(api, FleetDriftInput(records=cluster, slugs=[slug])))
    [checked] = [t for t in report.tenants if t.slug == slug] or [
        DriftReport(slug=slug, error="the worker found no onboarded record to check")
    ]
    return web.json_response(text=checked.model_dump_json())
