"""What every HTTP API handler reads from a request: the client it acts through, the token's user it acts for, the
body as a model; and the answer to a start. A gate answer's body and payload: :mod:`starter.api_answers`.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from aiohttp import web
from pydantic import BaseModel, ValidationError
from temporalio.client import WorkflowHandle

from tenantflow.models.api import StartedRun
from tenantflow.models.enrollment_workflows import EnrollmentInput
from tenantflow.models.onboarding import OnboardingInput
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import refuse_kubeconfig_paths
from tenantflow.starter.openapi import PATH_KEY, QUERY_KEY
from tenantflow.starter.problems import invalid, json_object
from tenantflow.worker.bearer import USER_KEY

API_KEY: web.AppKey[TenantflowClient] = web.AppKey("api", TenantflowClient)
M = TypeVar("M", bound=BaseModel)
StartInput = TypeVar("StartInput", OnboardingInput, EnrollmentInput)


def client_of(request: web.Request) -> TenantflowClient:
    return request.app[API_KEY]


def user_of(request: web.Request) -> str:
    """The token's user: who the request starts runs and answers gates for."""
    return request[USER_KEY]


def parsed(model: type[M], data: dict[str, Any], source: str = "request body") -> M:
    """``data`` as ``model``; 422 naming every field it refuses."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(source, exc) from None


async def body_as(request: web.Request, model: type[M]) -> M:
    """The request's JSON body as ``model`` (400 when it is no JSON object, 422 naming each field refused)."""
    return parsed(model, await json_object(request))


async def start_input(request: web.Request, model: type[StartInput]) -> tuple[StartInput, dict[str, Any]]:
    """The body of a start as the run's input ``model``: the input itself (``{"contract": {...}, ...}``) or its bare
    contract; with the input's options besides the contract. 422 naming each field refused, a kubeconfig path too."""
    data = await json_object(request)
    params = parsed(model, data if "contract" in data else {"contract": data})
    refuse_kubeconfig_paths(params.contract, "request body")
    return params, params.model_dump(exclude={"contract"})


def path_as(request: web.Request, model: type[M]) -> M:
    """The route's path parameters, validated as ``model`` before the handler ran (:func:`openapi.register`)."""
    return cast(M, request[PATH_KEY])


def query_as(request: web.Request, model: type[M]) -> M:
    """The route's query parameters, validated as ``model`` before the handler ran (:func:`openapi.register`)."""
    return cast(M, request[QUERY_KEY])


def started(handle: WorkflowHandle[Any, Any]) -> web.Response:
    """201 with how to address the run just started."""
    run = StartedRun(workflow_id=handle.id, run_id=handle.result_run_id)
    return web.json_response(text=run.model_dump_json(), status=201)
