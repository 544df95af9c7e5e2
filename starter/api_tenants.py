"""The HTTP API's routes of a tenant's life: onboard, change, offboard, its term and its renewal.

Each needs a role over the tenant (:mod:`starter.api_auth`): an onboarding's tenant is its contract's slug,
checked once the body is read. Each start is recorded as started by the token's user (the four-eyes rule compares
approvers with it) and answers 201 with the run's ids; a contract is validated, naming each field and its fix,
before anything starts.
"""

from __future__ import annotations

from aiohttp import web

from tenantflow.models.api import OffboardRequest, TenantPath
from tenantflow.models.change import slug_refusal
from tenantflow.models.lifecycle import RenewTerm, renew_days_problem
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.records import RecordStatus
from tenantflow.models.run_ids import lifecycle_id, onboarding_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.api_auth import authorize
from tenantflow.starter.api_requests import (
    answered_by_token_user,
    as_token_user,
    body_as,
    client_of,
    path_as,
    start_input,
    started,
    user_of,
)
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import refuse_kubeconfig_paths
from tenantflow.starter.problems import ApiProblem, or_404
from tenantflow.starter.records import tenant_record
from tenantflow.worker.targets import tenant
from tenantflow.worker.tokens import Role

RENEW_BODY = answered_by_token_user(RenewTerm)


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
    the contract's cluster gives the contract it changes from; the plan of creates, updates and removals waits at
    the `approve_plan` gate of `tenant/<slug>`.
    """
    slug = path_as(request, TenantPath).slug
    contract = await body_as(request, TenantContract)
    refusal = slug_refusal(slug, contract)
    if refusal:
        raise ApiProblem(422, refusal, ["slug"])
    refuse_kubeconfig_paths(contract, "request body")
    record = await tenant_record(contract.cluster, contract.slug)
    if record is None or record.status is not RecordStatus.onboarded:
        raise ApiProblem(
            404, f"{contract.slug} is not an onboarded tenant of {contract.cluster.describe()}; onboard it first"
        )
    return started(await client_of(request).start_change(contract, record.contract, on_behalf_of=user_of(request)))


async def recorded_contract(api: TenantflowClient, slug: str) -> TenantContract:
    """The contract of ``slug``'s record in the cluster its latest onboarding (or change) run named, else that run's
    own input; 404 when Temporal no longer has the run."""
    missing = f"no run {onboarding_id(slug)} in Temporal's history: send the tenant's contract as `contract`"
    latest = await or_404(api.onboarded_contract(slug), missing)
    record = await tenant_record(latest.cluster, slug)
    return record.contract if record is not None else latest


async def start_offboarding(request: web.Request) -> web.Response:
    """Start offboarding a tenant (`tenantflow offboard`).

    A teardown in rollback order, planned and gated at `approve_plan` like the onboarding (`offboard/<slug>`);
    the tenant's data is kept unless `purge_data`, which also waits for `confirm_purge`.
    """
    slug = path_as(request, TenantPath).slug
    body = await body_as(request, OffboardRequest)
    contract = body.contract or await recorded_contract(client_of(request), slug)
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
