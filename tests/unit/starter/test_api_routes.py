"""Every CLI action another service needs has an HTTP route in the API's OpenAPI document; the commands that have
none are listed here with the reason. A new CLI command fails this test until it gets a route or a reason."""

from __future__ import annotations

from typing import Any

from openapi_spec_validator import validate

from tenantflow.starter.cli import app
from tenantflow.starter.http_api import NO_ROUTE, api_document

GATE = ("POST", "/runs/{id}/gates/{gate}")
ROUTE_OF: dict[str, tuple[str, str]] = {
    "onboard": ("POST", "/runs/onboarding"),
    "apply": ("POST", "/tenants/{slug}/change"),
    "enroll": ("POST", "/runs/enrollment"),
    "decommission": ("POST", "/workerclusters/{namespace}/{worker}/decommission"),
    "offboard": ("POST", "/tenants/{slug}/offboarding"),
    "status": ("GET", "/runs/{id}"),
    "result": ("GET", "/runs/{id}/result"),
    "list": ("GET", "/runs"),
    "cancel": ("POST", "/runs/{id}/cancel"),
    "approve": ("POST", "/runs/{id}/gates/approve_plan"),
    "reject": ("POST", "/runs/{id}/gates/reject_plan"),
    "smoke-failed": ("POST", "/runs/{id}/gates/smoke_failed"),
    "submissions-paused": GATE,
    "approve-adoption": GATE,
    "uncordon": GATE,
    "resume-submissions": GATE,
    "confirm-purge": GATE,
    "retry-rollback": GATE,
    "renew": ("POST", "/tenants/{slug}/renew"),
    "schema": ("GET", "/schemas"),
    "validate": ("POST", "/contracts/tenant"),
    "plan": ("POST", "/plans"),
    "tenants": ("GET", "/tenants"),
    "handover": ("GET", "/tenants/{slug}/handover"),
    "drift": ("GET", "/tenants/{slug}/drift"),
}
"""Each CLI command a service would run, and the route that does the same; the others are ``NO_ROUTE``'s."""
API_ONLY = {
    ("GET", "/openapi.json"),
    ("GET", "/tenants/{slug}/term"),
    ("POST", "/contracts/workercluster"),
}
"""Routes no single CLI command matches: the document, the term (`tenantflow tenants` shows it per tenant), and
the validation of a worker cluster's contract (`tenantflow validate --kind worker`: one command, two routes)."""


def cli_commands() -> set[str]:
    return {str(c.name) for c in app.registered_commands} | {str(g.name) for g in app.registered_groups}


def operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item}


def test_every_cli_command_has_a_route_or_a_reason() -> None:
    assert not set(ROUTE_OF) & set(NO_ROUTE)
    assert cli_commands() == set(ROUTE_OF) | set(NO_ROUTE)


def test_every_route_of_the_table_is_in_the_document_and_every_documented_route_in_the_table() -> None:
    document = api_document()
    validate(document)
    assert operations(document) == set(ROUTE_OF.values()) | API_ONLY


def test_every_gate_command_is_a_gate_the_gate_route_answers() -> None:
    route = api_document()["paths"]["/runs/{id}/gates/{gate}"]["post"]
    [gate] = [p for p in route["parameters"] if p["name"] == "gate"]
    gates = {command.replace("-", "_") for command, answered in ROUTE_OF.items() if answered == GATE}
    assert set(gate["schema"]["enum"]) == gates


ROLE_OF: dict[tuple[str, str], str | None] = {
    ("GET", "/openapi.json"): None,
    ("GET", "/schemas"): None,
    ("POST", "/contracts/tenant"): None,
    ("POST", "/contracts/workercluster"): None,
    ("POST", "/plans"): "requester",
    ("GET", "/tenants"): "viewer",
    ("GET", "/tenants/{slug}/handover"): "viewer",
    ("GET", "/tenants/{slug}/drift"): "viewer",
    ("GET", "/runs"): "viewer",
    ("GET", "/runs/{id}"): "viewer",
    ("GET", "/runs/{id}/result"): "viewer",
    ("GET", "/tenants/{slug}/term"): "viewer",
    ("POST", "/runs/onboarding"): "requester",
    ("POST", "/runs/enrollment"): "requester",
    ("POST", "/tenants/{slug}/change"): "requester",
    ("POST", "/tenants/{slug}/renew"): "requester",
    ("POST", "/tenants/{slug}/offboarding"): "requester",
    ("POST", "/workerclusters/{namespace}/{worker}/decommission"): "requester",
    ("POST", "/runs/{id}/cancel"): "requester",
    ("POST", "/runs/{id}/gates/approve_plan"): "approver",
    ("POST", "/runs/{id}/gates/reject_plan"): "approver",
    ("POST", "/runs/{id}/gates/smoke_failed"): "approver",
    ("POST", GATE[1]): "approver",
}
"""The role each route needs (issue 25): reads viewer, starts and changes requester, gate answers approver."""


def test_every_route_declares_its_role_and_the_answers_of_a_token_without_it() -> None:
    document = api_document()
    assert document["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert document["security"] == [{"bearer": []}]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            role = ROLE_OF[(method.upper(), path)]
            assert operation.get("x-required-role") == role, (method, path)
            assert "401" in operation["responses"], (method, path)
            assert ("403" in operation["responses"]) is (role is not None), (method, path)
            if role is not None:
                assert f"no {role} role" in operation["responses"]["403"]["description"], (method, path)
