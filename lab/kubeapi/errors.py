"""Kubernetes-style API errors: an exception carrying a ``kind: Status`` body.

The store raises :class:`ApiError`; the HTTP layer turns it into a response with
the same code, so in-process controllers and HTTP clients see the same reasons
(``NotFound``, ``AlreadyExists``, ``Conflict``, ``Invalid``, ``Forbidden`` ...).
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An API failure shaped like the real apiserver's ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified(resource: str, group: str) -> str:
    """``pods`` or ``reservations.scheduling.example.io``, as the real messages print it."""
    return f"{resource}.{group}" if group else resource


def _details(resource: str, group: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found', _details(resource, group, name)
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{qualified(resource, group)} "{name}" already exists', _details(resource, group, name)
    )


def conflict(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": the object '
        "has been modified; please apply your changes to the latest version and try again",
        _details(resource, group, name),
    )


def precondition_failed(
    resource: str, group: str, name: str, key: str, what: str, wanted: str, actual: str
) -> ApiError:
    """409 of a DELETE whose ``preconditions`` (DeleteOptions) do not hold, as kube-apiserver words it:
    ``storage.Preconditions.Check`` (k8s.io/apiserver pkg/storage/interfaces.go) fails with an invalid-object
    StorageError, which ``storeerr.InterpretDeleteError`` turns into ``NewConflict`` (k8s.io/apimachinery
    pkg/api/errors) around the StorageError's text."""
    storage = (
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: "
        f"Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {actual}"
    )
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {storage}',
        _details(resource, group, name),
    )


REQUIRED = "Required value"
"""How k8s.io/apimachinery's ``field.Required`` error begins (reason ``FieldValueRequired``)."""


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 with one cause per ``(field, message)``; the message names every field. A message beginning with
    :data:`REQUIRED` is a ``FieldValueRequired`` cause, any other ``FieldValueInvalid``."""
    text = "; ".join(f"{field}: {msg}" if field else msg for field, msg in causes)
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [
            {
                "reason": "FieldValueRequired" if msg.startswith(REQUIRED) else "FieldValueInvalid",
                "message": msg,
                "field": field,
            }
            for field, msg in causes
        ],
    }
    if group:
        details["group"] = group
    return ApiError(
        422,
        "Invalid",
        f'{kind}.{group} "{name}" is invalid: {text}' if group else f'{kind} "{name}" is invalid: {text}',
        details,
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)
