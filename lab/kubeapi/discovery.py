"""Discovery documents (``/api``, ``/apis``, group versions, ``/version``) and the
minimal OpenAPI v3 documents kubectl reads, all generated from the live registry.

The OpenAPI documents carry only what kubectl's field-validation and patch
checks look at: one PATCH operation per kind, tagged with
``x-kubernetes-group-version-kind``, that accepts the ``fieldValidation`` query
parameter. They carry no schemas, so kubectl validates nothing client-side and
sends ``fieldValidation=Strict`` to the server, which validates for real.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tenantflow.lab.kubeapi.registry import Registry, ResourceType

KUBERNETES_VERSION_INFO = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.4-lab",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2025-04-22T00:00:00Z",
    "goVersion": "go1.23.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = []
    for group, versions in sorted(registry.group_versions().items()):
        if not group:
            continue
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    return next((g for g in api_group_list(registry)["groups"] if g["name"] == group), None)


def _entries(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    out = [main]
    if rt.status_subresource:
        out.append(
            {
                "name": f"{rt.plural}/status",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    if "exec" in rt.subresources:
        out.append(
            {
                "name": f"{rt.plural}/exec",
                "singularName": "",
                "namespaced": True,
                "kind": "PodExecOptions",
                "verbs": ["create", "get"],
            }
        )
    if "log" in rt.subresources:
        out.append(
            {"name": f"{rt.plural}/log", "singularName": "", "namespaced": True, "kind": rt.kind, "verbs": ["get"]}
        )
    return out


def _served(registry: Registry, group: str, version: str) -> list[ResourceType]:
    return sorted(
        (rt for rt in registry.types() if rt.group == group and version in rt.versions), key=lambda rt: rt.plural
    )


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = _served(registry, group, version)
    if not types:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [e for rt in types for e in _entries(rt)],
    }


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_doc(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = _served(registry, group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rt in types:
        scope = "/namespaces/{namespace}" if rt.namespaced else ""
        patch = {
            "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": rt.kind},
            "x-kubernetes-action": "patch",
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}},
        }
        paths[f"/{_gv_path(group, version)}{scope}/{rt.plural}/{{name}}"] = {"patch": patch}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.4-lab"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def openapi_v3_root(registry: Registry) -> dict[str, Any]:
    paths = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            doc = openapi_v3_doc(registry, group, version)
            digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
            path = _gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
