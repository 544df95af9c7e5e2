"""``tenantflow serve-api``: a small authenticated HTTP endpoint to start runs and answer gates.

Every request needs ``Authorization: Bearer <token>`` with a token of the per-user token file named by
``TENANTFLOW_API_TOKENS_FILE`` (:mod:`worker.tokens`; ``tenantflow token USER`` makes one). The token's user is
who answers a gate: it is recorded as the approver, a body naming another ``approver`` is refused (403), and the
worker's four-eyes rule compares it with who started the run. Runs started here are started by the API's own
Temporal identity on behalf of the token's user. ``tenantflow serve-api --tls-cert --tls-key`` serves HTTPS.

* ``POST /runs/onboarding`` body: a TenantContract (JSON) or ``{"contract": {...}, ...}`` (OnboardingInput);
  201 with ``{"workflow_id", "run_id"}``, 409 when a run for the tenant is active, 422 on a bad contract.
* ``GET /runs/{id}``: the run's ``status`` query (404 if unknown).
* ``POST /runs/{id}/gates/{gate}``: ``approve_plan`` (body ``{"plan_hash": ...}``), ``reject_plan``
  (``{"reason": ...}``) or a yes/no gate (``YES_NO_GATES``: enrollment gates, ``confirm_purge``,
  ``retry_rollback``); 200 with the answer, 403 for another approver, 409 when refused.
* ``POST /tenants/{slug}/change`` body: the new TenantContract: ``tenantflow apply`` (a ``TenantChange`` from the
  tenant's record in the contract's cluster); 201 with ``{"workflow_id", "run_id"}``, 422 on a bad contract or a
  slug other than ``{slug}`` (the slug cannot change), 404 without an ``onboarded`` record, 409 when a run is active.
* ``GET /tenants/{slug}/term``: the tenant's term (its lifecycle's ``term`` query); 404 without a lifecycle.
* ``POST /tenants/{slug}/renew`` body ``{"days": 90, "comment": ...}``: extend the term, renewed by the token's
  user (403 for a body naming another ``approver``); 200 with the term, 422 for days outside 1 to 3650, 404
  without a lifecycle, 409 when the lifecycle refuses (its term ended).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from tenantflow.models.change import slug_refusal
from tenantflow.models.content_types import JSON
from tenantflow.models.explain import format_validation_error
from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan
from tenantflow.models.lifecycle import RenewTerm, renew_days_problem
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.records import RecordStatus
from tenantflow.models.run_ids import lifecycle_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import YES_NO_GATES, RunAlreadyActive, TenantflowClient
from tenantflow.starter.contracts import ContractError, refuse_kubeconfig_paths
from tenantflow.starter.records import tenant_record
from tenantflow.worker.tokens import TOKENS_FILE_ENV, USER_KEY, TokenFileError, TokenTable, bearer_auth

API_KEY: web.AppKey[TenantflowClient] = web.AppKey("api", TenantflowClient)
M = TypeVar("M", bound=BaseModel)


def api_tokens() -> TokenTable:
    """The per-user tokens of ``TENANTFLOW_API_TOKENS_FILE``; refuse to run without."""
    path = os.environ.get(TOKENS_FILE_ENV, "")
    if not path:
        raise TokenFileError(f"set {TOKENS_FILE_ENV} to a token file (make entries with `tenantflow token USER`)")
    return TokenTable.load(Path(path))


def problem(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def body_of(request: web.Request) -> dict[str, Any]:
    data = await request.json() if request.can_read_body else {}
    if not isinstance(data, dict):
        raise web.HTTPUnprocessableEntity(text='{"error": "expected a JSON object"}', content_type=JSON)
    return data


async def start_onboarding(request: web.Request) -> web.Response:
    data = await body_of(request)
    try:
        params = OnboardingInput.model_validate(data if "contract" in data else {"contract": data})
        refuse_kubeconfig_paths(params.contract, "request body")
    except ValidationError as exc:
        return problem(422, format_validation_error("request body", exc))
    except ContractError as exc:
        return problem(422, str(exc))
    api = request.app[API_KEY]
    try:
        handle = await api.start_onboarding(
            params.contract, on_behalf_of=request[USER_KEY], **params.model_dump(exclude={"contract"})
        )
    except RunAlreadyActive as exc:
        return problem(409, str(exc))
    return web.json_response({"workflow_id": handle.id, "run_id": handle.result_run_id}, status=201)


async def start_change(request: web.Request) -> web.Response:
    data = await body_of(request)
    try:
        contract = TenantContract.model_validate(data)
    except ValidationError as exc:
        return problem(422, format_validation_error("request body", exc))
    refusal = slug_refusal(request.match_info["slug"], contract)
    if refusal:
        return problem(422, refusal)
    try:
        refuse_kubeconfig_paths(contract, "request body")
    except ContractError as exc:
        return problem(422, str(exc))
    record = await tenant_record(contract.cluster, contract.slug)
    if record is None or record.status is not RecordStatus.onboarded:
        return problem(404, f"{contract.slug} is not an onboarded tenant of {contract.cluster.describe()}")
    try:
        handle = await request.app[API_KEY].start_change(contract, record.contract, on_behalf_of=request[USER_KEY])
    except RunAlreadyActive as exc:
        return problem(409, str(exc))
    return web.json_response({"workflow_id": handle.id, "run_id": handle.result_run_id}, status=201)


async def run_status(request: web.Request) -> web.Response:
    try:
        status = await request.app[API_KEY].status(request.match_info["id"])
    except RPCError as exc:
        return problem(404 if exc.status == RPCStatusCode.NOT_FOUND else 502, exc.message)
    return web.json_response(text=status.model_dump_json())


class NotTheTokenUser(ValueError):
    """A gate answer naming an approver other than the token's user."""


def as_user(model: type[M], data: dict[str, Any], user: str) -> M:
    """The gate payload with the authenticated ``user`` as approver; a body naming someone else is refused."""
    named = data.get("approver", user)
    if named != user:
        raise NotTheTokenUser(f"approver must be the token's user {user!r}, not {named!r}")
    return model.model_validate({**data, "approver": user})


async def answer_gate(request: web.Request) -> web.Response:
    api, workflow_id, gate = request.app[API_KEY], request.match_info["id"], request.match_info["gate"]
    data, user = await body_of(request), request[USER_KEY]
    try:
        if gate == "approve_plan":
            approval = as_user(ApprovePlan, data, user)
            answer = await api.approve(workflow_id, approval.plan_hash, approval.comment, on_behalf_of=user)
        elif gate == "reject_plan":
            rejection = as_user(RejectPlan, data, user)
            answer = await api.reject(workflow_id, rejection.reason, on_behalf_of=user)
        elif gate in YES_NO_GATES:
            yes = as_user(GateAnswer, data, user)
            answer = await api.answer_gate(workflow_id, gate, yes.comment, on_behalf_of=user)
        else:
            return problem(404, f"unknown gate {gate!r}")
    except NotTheTokenUser as exc:
        return problem(403, str(exc))
    except ValidationError as exc:
        return problem(422, format_validation_error("request body", exc))
    except WorkflowUpdateFailedError as exc:
        return problem(409, str(getattr(exc.cause, "message", None) or exc.cause or exc))
    except RPCError as exc:
        return problem(404 if exc.status == RPCStatusCode.NOT_FOUND else 502, exc.message)
    return web.json_response({"workflow_id": workflow_id, "gate": gate, "answer": answer})


async def tenant_term(request: web.Request) -> web.Response:
    slug = request.match_info["slug"]
    term = await request.app[API_KEY].term(slug)
    if term is None:
        return problem(404, f"{slug} has no lifecycle ({lifecycle_id(slug)}): its onboarding has not completed")
    return web.json_response(text=term.model_dump_json())


async def renew_term(request: web.Request) -> web.Response:
    api, slug, user = request.app[API_KEY], request.match_info["slug"], request[USER_KEY]
    try:
        renewal = as_user(RenewTerm, await body_of(request), user)
    except NotTheTokenUser as exc:
        return problem(403, str(exc))
    except ValidationError as exc:
        return problem(422, format_validation_error("request body", exc))
    bad_days = renew_days_problem(renewal.days)
    if bad_days:
        return problem(422, bad_days)
    current = await api.term(slug)
    if current is None:
        return problem(404, f"{slug} has no lifecycle ({lifecycle_id(slug)}): its onboarding has not completed")
    if current.stage != "term:running":
        return problem(409, f"the term of {slug} ended ({current.stage}): onboard it again to start a new term")
    try:
        term = await api.renew(slug, renewal.days, renewal.comment, on_behalf_of=user)
    except WorkflowUpdateFailedError as exc:
        return problem(409, str(getattr(exc.cause, "message", None) or exc.cause or exc))
    return web.json_response(text=term.model_dump_json())


def make_api_app(api: TenantflowClient, tokens: TokenTable) -> web.Application:
    app = web.Application(middlewares=[bearer_auth(tokens)])
    app[API_KEY] = api
    app.router.add_post("/runs/onboarding", start_onboarding)
    app.router.add_post(r"/runs/{id:.+}/gates/{gate}", answer_gate)
    app.router.add_get(r"/runs/{id:.+}", run_status)
    app.router.add_post("/tenants/{slug}/change", start_change)
    app.router.add_get("/tenants/{slug}/term", tenant_term)
    app.router.add_post("/tenants/{slug}/renew", renew_term)
    return app
