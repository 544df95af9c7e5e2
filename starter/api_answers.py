"""A gate answer over the HTTP API: the body a route reads, and the gate payload it sends, answered by the token's
user.

A gate answer's body is the gate payload with ``approver`` optional (:func:`answered_by_token_user`): the approver
is the token's user, and a body naming anyone else is refused (403, :func:`as_token_user`), so a caller cannot
answer in another's name.
"""

from __future__ import annotations

from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, Field, create_model

from tenantflow.models.api import TOKEN_USER
from tenantflow.models.base import Strict
from tenantflow.starter.api_requests import body_as, user_of
from tenantflow.starter.problems import ApiProblem

M = TypeVar("M", bound=BaseModel)


def answered_by_token_user(model: type[BaseModel]) -> type[BaseModel]:
    """The body of a gate answer: the fields of the gate payload ``model``, with ``approver`` optional."""
    fields: dict[str, Any] = {
        name: (info.annotation, info) for name, info in model.model_fields.items() if name != "approver"
    }
    return create_model(
        f"{model.__name__}Body",
        __base__=Strict,
        __doc__=model.__doc__,
        approver=(str | None, Field(None, description=TOKEN_USER)),
        **fields,
    )


async def as_token_user(request: web.Request, body: type[BaseModel], payload: type[M]) -> M:
    """The gate payload of the request's ``body`` (a model of :func:`answered_by_token_user`), answered by the token's
    user; 403 for a body naming another approver."""
    answer, user = await body_as(request, body), user_of(request)
    named = getattr(answer, "approver", None)
    if named not in (None, user):
        raise ApiProblem(403, f"approver must be the token's user {user!r}, not {named!r}: omit it", ["approver"])
    return payload.model_validate({**answer.model_dump(exclude={"approver"}), "approver": user})
