"""The HTTP API's routes that read contracts without starting a run: the JSON Schemas, validation and the
read-only plan (``tenantflow schema``, ``validate`` and ``plan``).

Validation is pure: the contract is checked in this process, nothing else is asked. A plan runs on the worker as
the read-only ``TenantPlan`` workflow (:mod:`starter.plan`), with the services' credentials the worker has: this
server needs only Temporal access, as for every other route.
"""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, create_model
from temporalio.client import WorkflowFailureError

from tenantflow.models.api import PlanPreview
from tenantflow.models.base import Strict
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.api_auth import authorize
from tenantflow.starter.api_requests import body_as, client_of, parsed
from tenantflow.starter.contracts import contract_schemas, refuse_kubeconfig_paths
from tenantflow.starter.failures import explain
from tenantflow.starter.plan import preflight_and_plan
from tenantflow.starter.problems import ApiProblem, json_object
from tenantflow.worker.targets import tenant
from tenantflow.worker.tokens import Role


async def schemas(request: web.Request) -> web.Response:
    """The JSON Schema of both contracts and of every workflow input, by model name (`tenantflow schema`)."""
    return web.json_response(contract_schemas())


async def checked(request: web.Request, model: type[BaseModel]) -> web.Response:
    """200 with the body as ``model``; 422 naming each field refused, as a start refuses its bare contract: a
    refusal of the whole contract (two fields that disagree) names ``contract``, a field ``contract.<field>``."""
    wrapper = create_model(f"{model.__name__}Body", __base__=Strict, contract=(model, ...))
    contract: BaseModel = dict(parsed(wrapper, {"contract": await json_object(request)}))["contract"]
    refuse_kubeconfig_paths(contract, "request body")
    return web.json_response(text=contract.model_dump_json())


async def validate_tenant(request: web.Request) -> web.Response:
    """Check a tenant contract without touching anything (`tenantflow validate FILE`).

    200 with the contract as the worker would read it (defaults filled in); 422 naming every field it refuses.
    """
    return await checked(request, TenantContract)


async def validate_workercluster(request: web.Request) -> web.Response:
    """Check a worker cluster's enrollment contract without touching anything (`tenantflow validate FILE --kind
    worker`).

    200 with the contract as the worker would read it (defaults filled in); 422 naming every field it refuses.
    """
    return await checked(request, WorkerEnrollment)


async def plan_contract(request: web.Request) -> web.Response:
    """The read-only preflight and plan of a tenant contract (`tenantflow plan`), run by the worker.

    The worker runs the `TenantPlan` workflow (`plan/<slug>/<nonce>`): every preflight of the onboarding and, when
    none found an error, every layer's plan; nothing is written and no run of the tenant is started. `ok` is false
    when a preflight finding blocks the onboarding (the plan is then left out).
    """
    contract = await body_as(request, TenantContract)
    authorize(request, Role.requester, tenant(contract.slug))
    refuse_kubeconfig_paths(contract, "request body")
    try:
        report = await preflight_and_plan(client_of(request), contract)
    except WorkflowFailureError as exc:
        failure = explain(exc)
        raise ApiProblem(
            502,
            f"the worker could not plan: {failure.error_type}: {failure.message} (the worker reads every service: "
            "set the service's settings in the worker's configuration)",
        ) from None
    return web.json_response(text=PlanPreview.of(report).model_dump_json())
