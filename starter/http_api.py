"""``tenantflow serve-api``: a small authenticated HTTP API to start runs, follow them and answer their gates, for
services that would otherwise run the CLI; ``GET /openapi.json`` describes every route, body and answer.

Every request needs ``Authorization: Bearer <token>`` (the ``Bearer`` scheme is required) with a token of the
per-user token file named by ``TENANTFLOW_API_TOKENS_FILE`` (:mod:`worker.tokens`; ``tenantflow token USER --role
ROLE:PATTERN`` makes one); the file is read again on every request, so a token removed from it stops working at
once. Each token's line grants roles over tenant (and worker cluster) patterns, and every route needs one
(:mod:`starter.api_auth`; each operation's ``x-required-role``): ``viewer`` reads, ``requester`` starts, changes,
renews, offboards and cancels, ``approver`` answers gates, ``admin`` does all; a token without the role for the
run's tenant is refused (403, naming the role and the tenant), and ``GET /runs`` lists only the runs it may view.
The token's user is who starts a run and who answers a gate: it is recorded as the approver, a body naming another
``approver`` is refused (403), and the worker's four-eyes rule compares it with who started the run. Runs are
started by the API's own Temporal identity on behalf of the token's user, the start signed for that user with the
API's ``TENANTFLOW_APPROVAL_KEY`` (a start proof: without one the four-eyes rule counts the starter as only
declared and refuses every approval). ``tenantflow serve-api --tls-cert --tls-key`` serves HTTPS.

:data:`ROUTES` is the table the app is built from and the OpenAPI document generated from (:mod:`starter.openapi`);
handlers live in :mod:`starter.api_contracts`, :mod:`starter.api_tenants` and :mod:`starter.api_runs`; the CLI's
commands without a route are :data:`NO_ROUTE`'s, with the reason. Every refusal is a JSON problem naming the field
and the fix (:mod:`starter.problems`): 400 for a body that is no JSON object, 401 for a missing or
unknown token, 403 for a role the token lacks, 422 for a field a model refuses, 404 for an unknown run, 409 when
the run refuses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from tenantflow.models.api import (
    CancelRequested,
    ClusterQuery,
    DecommissionRequest,
    GateAnswered,
    OffboardRequest,
    PlanPreview,
    RunPath,
    RunResult,
    RunsQuery,
    RunSummary,
    StartedRun,
    TenantClusterQuery,
    TenantPath,
    TenantSummary,
    WorkerPath,
)
from tenantflow.models.drift import DriftReport
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import EnrollmentInput
from tenantflow.models.lifecycle import TermStatus
from tenantflow.models.onboarding import OnboardingInput, OnboardingResult
from tenantflow.models.status import RunStatus
from tenantflow.models.tenant import TenantContract
from tenantflow.starter import api_contracts, api_runs, api_tenants
from tenantflow.starter.api_auth import of_run_path, of_tenant_path, of_worker_path
from tenantflow.starter.api_requests import API_KEY
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.openapi import BODY_LIMIT, Handler, Reply, Route, openapi_document, register
from tenantflow.starter.problems import problems
from tenantflow.worker.bearer import bearer_auth
from tenantflow.worker.targets import Target
from tenantflow.worker.tokens import TOKENS_FILE_ENV, Role, TokenFile, TokenFileError, TokenSource

STARTED = {201: Reply("the run started: its workflow id and run id", StartedRun)}
ACTIVE = {409: Reply("a run for the same target is in progress (the message names it)")}
NO_RUN = {404: Reply("Temporal knows no run of this id")}
GATE = {
    200: Reply("the run's answer", GateAnswered),
    403: Reply("the body names an approver other than the token's user"),
    **NO_RUN,
    409: Reply("the run refused: a stale plan hash, a gate that is not open, four-eyes (the message says which)"),
}
WORKER_READ = {502: Reply("the worker could not read the records or a service (the message names the step)")}
TERM = {200: Reply("the term", TermStatus), 404: Reply("the tenant has no lifecycle: its onboarding has not completed")}


async def openapi(request: web.Request) -> web.Response:
    """This API as an OpenAPI 3.1 document."""
    return web.json_response(request.app[DOCUMENT_KEY])


@dataclass(frozen=True)
class Subject:
    """What a family of routes acts on: the path prefix that names it, the model of that prefix's parameters and how
    the target the token needs a role over is read from them. The three must agree (:func:`of_run_path` reads a
    :class:`RunPath`), so each family states them once and its routes are made by :meth:`route`."""

    prefix: str
    params: type[BaseModel]
    target: Callable[[Any], Target]

    def route(
        self,
        method: str,
        suffix: str,
        handler: Handler,
        replies: Mapping[int, Reply],
        *,
        role: Role,
        body: Any = None,
        body_required: bool = True,
        params: type[BaseModel] | None = None,
        query: type[BaseModel] | None = None,
    ) -> Route:
        """The route ``method`` at the prefix followed by ``suffix``; ``params``: a model extending the prefix's that
        also reads the suffix's parameters."""
        return Route(
            method,
            self.prefix + suffix,
            handler,
            replies,
            body=body,
            body_required=body_required,
            path_params=params or self.params,
            query=query,
            role=role,
            target=self.target,
        )

    def teardown(
        self, action: str, handler: Handler, body: Any, made_by: str, query: type[BaseModel] | None = None
    ) -> Route:
        """``POST <prefix>/<action>``, a requester's: start tearing the target down. The body's contract is optional:
        without one, the contract of the run that made the target (``made_by``, e.g. the tenant's onboarding) is
        used, and the answer is 404 when Temporal no longer has that run. With ``query`` (the cluster holding the
        target's record), the worker reads the record first: its contract is used when there is one."""
        missing = Reply(f"no contract given and Temporal no longer has the {made_by} run")
        replies = {**STARTED, 404: missing, **ACTIVE, **(WORKER_READ if query is not None else {})}
        return self.route(
            "POST", f"/{action}", handler, replies, role=Role.requester, body=body, body_required=False, query=query
        )


RUN = Subject("/runs/{id:.+}", RunPath, of_run_path)
TENANT = Subject("/tenants/{slug}", TenantPath, of_tenant_path)
WORKER = Subject("/workerclusters/{namespace}/{worker}", WorkerPath, of_worker_path)


def start_route(kind: str, handler: Handler, body: Any) -> Route:
    """``POST /runs/<kind>``: start a run from the contract (or the full input) in the body."""
    return Route("POST", f"/runs/{kind}", handler, {**STARTED, **ACTIVE}, body=body, role=Role.requester)


def gate_route(gate: str, handler: Handler, body: Any, **options: Any) -> Route:
    """``POST /runs/{id}/gates/<gate>``: answer a gate of a run, for an approver of the run's target."""
    return RUN.route("POST", f"/gates/{gate}", handler, GATE, role=Role.approver, body=body, **options)


def contract_check(kind: str, handler: Handler, model: type[BaseModel]) -> Route:
    """``POST /contracts/<kind>``: validate a contract of ``model`` (``tenantflow validate``), for any known token:
    it reads nothing of any tenant or worker cluster."""
    valid = Reply("the contract is valid: as the worker reads it", model)
    return Route("POST", f"/contracts/{kind}", handler, {200: valid}, body=model, role=None)


def tenant_read(path: str, handler: Handler, found: Reply, missing: str, conflict: str) -> Route:
    """``GET /tenants/{slug}<path>``: what the worker reads of a tenant's record (in the cluster of ``?cluster=``),
    for a viewer of the tenant."""
    replies = {200: found, 404: Reply(missing), 409: Reply(conflict), **WORKER_READ}
    return TENANT.route("GET", path, handler, replies, query=TenantClusterQuery, role=Role.viewer)


ROUTES: list[Route] = [
    Route("GET", "/openapi.json", openapi, {200: Reply("the document", dict[str, Any])}, role=None),
    Route(
        "GET",
        "/runs",
        api_runs.list_runs,
        {200: Reply("the runs the token may view", list[RunSummary])},
        query=RunsQuery,
        role=Role.viewer,
    ),
    Route(
        "GET", "/schemas", api_contracts.schemas, {200: Reply("each schema by model name", dict[str, Any])}, role=None
    ),
    contract_check("tenant", api_contracts.validate_tenant, TenantContract),
    contract_check("workercluster", api_contracts.validate_workercluster, WorkerEnrollment),
    Route(
        "POST",
        "/plans",
        api_contracts.plan_contract,
        {
            200: Reply("the findings and, when no preflight found an error, the plan", PlanPreview),
            502: Reply("the worker could not read a service (the message names the step and the error)"),
        },
        body=TenantContract,
        role=Role.requester,
    ),
    start_route("onboarding", api_tenants.start_onboarding, OnboardingInput | TenantContract),
    start_route("enrollment", api_runs.start_enrollment, EnrollmentInput | WorkerEnrollment),
    gate_route("approve_plan", api_runs.approve_plan, api_runs.APPROVE_BODY),
    gate_route("reject_plan", api_runs.reject_plan, api_runs.REJECT_BODY),
    gate_route("smoke_failed", api_runs.smoke_failed, api_runs.SMOKE_BODY),
    gate_route("{gate}", api_runs.answer_gate, api_runs.GATE_BODY, body_required=False, params=api_runs.GatePath),
    RUN.route(
        "POST",
        "/cancel",
        api_runs.cancel_run,
        {202: Reply("cancel requested", CancelRequested), **NO_RUN},
        role=Role.requester,
    ),
    RUN.route(
        "GET",
        "/result",
        api_runs.run_result,
        {
            200: Reply("how the run ended", RunResult),
            404: Reply("Temporal knows no run of this id, or it is of a kind that reports no result"),
            409: Reply("the run is still in progress"),
        },
        role=Role.viewer,
    ),
    RUN.route("GET", "", api_runs.run_status, {200: Reply("the status", RunStatus), **NO_RUN}, role=Role.viewer),
    TENANT.route(
        "POST",
        "/change",
        api_tenants.start_change,
        {
            **STARTED,
            404: Reply("the tenant has no `onboarded` record in the contract's cluster"),
            **ACTIVE,
            **WORKER_READ,
        },
        body=TenantContract,
        role=Role.requester,
    ),
    TENANT.teardown(
        "offboarding",
        api_tenants.start_offboarding,
        OffboardRequest,
        made_by="tenant's onboarding",
        query=TenantClusterQuery,
    ),
    TENANT.route("GET", "/term", api_tenants.tenant_term, TERM, role=Role.viewer),
    Route(
        "GET",
        "/tenants",
        api_tenants.list_tenants,
        {
            200: Reply("the tenants recorded in the cluster that the token may view", list[TenantSummary]),
            **WORKER_READ,
        },
        query=ClusterQuery,
        role=Role.viewer,
    ),
    tenant_read(
        "/handover",
        api_tenants.tenant_handover,
        Reply("the handover sheet, with what was applied and who approved it", OnboardingResult),
        missing="no record of the tenant and no completed onboarding run",
        conflict="the tenant's onboarding is still running, or its record says it is no longer onboarded",
    ),
    tenant_read(
        "/drift",
        api_tenants.tenant_drift,
        Reply("what is missing, changed or extra; `error` when the check could not finish", DriftReport),
        missing="no record of the tenant in the cluster (nor an onboarding run naming one)",
        conflict="the tenant's record says it is no longer onboarded",
    ),
    TENANT.route(
        "POST",
        "/renew",
        api_tenants.renew_term,
        {
            **TERM,
            403: Reply("the body names an approver other than the token's user"),
            409: Reply("the term has ended"),
        },
        body=api_tenants.RENEW_BODY,
        role=Role.requester,
    ),
    WORKER.teardown("decommission", api_runs.start_decommission, DecommissionRequest, made_by="worker's enrollment"),
]
"""Every route, for every action of the CLI (``tenantflow --help``) but those of :data:`NO_ROUTE`."""

NO_ROUTE: dict[str, str] = {
    "worker": "runs the worker process itself, where the services' credentials are",
    "dev-server": "starts a Temporal server on the operator's machine, for development",
    "setup": "creates the namespace's search attributes once, with Temporal admin rights the API does not hold",
    "doctor": "probes the estate from the operator's shell with the worker's configuration, before any run",
    "codec-server": "is a server of its own, which the Temporal UI calls",
    "serve-api": "is the API",
    "token": "mints a credential into the API's token file: a token must not be able to mint tokens",
    "demo": "brings the lab and Temporal up on the operator's machine",
    "lab": "runs the stand-ins on the operator's machine, for development",
    "bench": "measures runs against a local lab",
}
"""The CLI's commands that have no route, and why: servers and tools of the operator's machine, not actions
(``tests/unit/starter/test_api_routes.py`` fails on a command that has neither a route nor a reason here)."""
DOCUMENT_KEY: web.AppKey[dict[str, Any]] = web.AppKey("openapi", dict)


def api_document() -> dict[str, Any]:
    """The OpenAPI document of :data:`ROUTES`."""
    return openapi_document(ROUTES, "tenantflow", version("tenantflow"), __doc__ or "")


def api_tokens() -> TokenFile:
    """The per-user token file of ``TENANTFLOW_API_TOKENS_FILE``, read once now so that a missing or invalid file
    stops the server from starting (then again on every request); refuse to run without."""
    path = os.environ.get(TOKENS_FILE_ENV, "")
    if not path:
        raise TokenFileError(
            f"set {TOKENS_FILE_ENV} to a token file (make entries with `tenantflow token USER --role ROLE:PATTERN`)"
        )
    tokens = TokenFile(Path(path))
    tokens.current()
    return tokens


def make_api_app(api: TenantflowClient, tokens: TokenSource) -> web.Application:
    app = web.Application(client_max_size=BODY_LIMIT, middlewares=[problems, bearer_auth(tokens)])
    app[API_KEY] = api
    app[DOCUMENT_KEY] = api_document()
    register(app, ROUTES)
    return app
