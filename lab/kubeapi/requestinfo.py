"""What one Kubernetes API request asks: its resource URL parsed into a :class:`Target` (type, version, namespace,
name, subresource), its authorization verb, its decoded body (JSON, YAML or protobuf) and its write options
(``dryRun``, ``fieldValidation``, and the field manager, refused as the apiserver refuses it; see
:mod:`lab.kubeapi.managedfields`)."""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from tenantflow.lab.kubeapi.auth import Attributes
from tenantflow.lab.kubeapi.errors import ApiError, bad_request
from tenantflow.lab.kubeapi.managedfields import manager_from_user_agent, validate_options
from tenantflow.lab.kubeapi.protowire import UnsupportedKind, decode_object
from tenantflow.lab.kubeapi.registry import ResourceType
from tenantflow.lab.kubeapi.store import Store

TRUE = ("1", "true", "True")


class Target:
    """A parsed resource URL: type, version, namespace, name, subresource."""

    def __init__(self, rt: ResourceType, version: str, namespace: str, name: str, sub: str) -> None:
        self.rt, self.version, self.namespace, self.name, self.sub = rt, version, namespace, name, sub

    def attributes(self, verb: str) -> Attributes:
        return Attributes(
            verb=verb,
            group=self.rt.group,
            resource=self.rt.plural,
            namespace=self.namespace,
            name=self.name,
            subresource=self.sub,
        )

    def present(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj["apiVersion"] = self.rt.api_version(self.version)
        return obj


def parse_target(store: Store, parts: list[str]) -> Target:
    if parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    rt = store.registry.lookup(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and sub not in rt.all_subresources:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if rt.key == ("", "namespaces") and name:
        namespace = ""
    if namespace and not rt.namespaced:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return Target(rt, version, namespace, name, sub)


def verb_of(request: web.Request, target: Target) -> str:
    method = request.method
    if target.sub == "exec":
        return "create"
    if method == "GET":
        if request.query.get("watch") in TRUE:
            return "watch"
        return "get" if target.name else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(
        method, "delete" if target.name else "deletecollection"
    )


async def read_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        return {}
    try:
        if "protobuf" in request.content_type:
            return decode_object(raw)
        if "yaml" in request.content_type:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except UnsupportedKind as exc:
        raise ApiError(415, "UnsupportedMediaType", str(exc)) from exc
    except (ValueError, IndexError, yaml.YAMLError) as exc:
        raise bad_request(f"the body of the request could not be decoded: {exc}") from exc


def write_options(request: web.Request) -> dict[str, Any]:
    return {
        "dry_run": request.query.get("dryRun") == "All",
        "field_validation": request.query.get("fieldValidation", "Warn"),
    }


def field_manager(request: web.Request, options_kind: str, *, apply: bool = False) -> str:
    """The request's field manager, refused as the apiserver refuses it; a write naming none is recorded under its
    User-Agent's product name."""
    given = request.query.get("fieldManager", "")
    validate_options(options_kind, given, apply=apply, force="force" in request.query)
    return given or manager_from_user_agent(request.headers.get("User-Agent", ""))
