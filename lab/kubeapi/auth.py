"""Bearer-token users and their RBAC-like policies, and SelfSubjectAccessReview answers.

A policy maps a bearer token to a :class:`User`. A user whose ``rules`` is ``None``
may do everything, as may any request whose token has no entry (the lab's
default admin). Rule fields take ``"*"`` as a wildcard; ``resources`` may name a
subresource (``pods/exec``); ``namespaces`` restricts namespaced requests, and a
rule grants cluster-scoped requests only when its namespaces contain ``"*"``.
JSON/YAML form accepted by :func:`parse_policies`::

    {"<token>": {"user": "alice", "rules": [
        {"verbs": ["get", "list"], "apiGroups": ["trainy.ai"],
         "resources": ["bootstrapenrollments"], "namespaces": ["forecasting"]}]}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tenantflow.lab.kubeapi.errors import ApiError, forbidden


class PolicyRule(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    verbs: list[str]
    api_groups: list[str] = Field(default_factory=lambda: ["*"], alias="apiGroups")
    resources: list[str] = Field(default_factory=lambda: ["*"])
    namespaces: list[str] = Field(default_factory=lambda: ["*"])

    def allows(self, attrs: Attributes) -> bool:
        resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (
            _match(self.verbs, attrs.verb)
            and _match(self.api_groups, attrs.group)
            and (_match(self.resources, resource) or f"{attrs.resource}/*" in self.resources)
            and ("*" in self.namespaces or bool(attrs.namespace and attrs.namespace in self.namespaces))
        )


class User(BaseModel):
    user: str
    groups: list[str] = Field(default_factory=lambda: ["system:authenticated"])
    rules: list[PolicyRule] | None = None


ADMIN = User(user="kubernetes-admin", groups=["system:masters", "system:authenticated"])


def _match(allowed: list[str], value: str) -> bool:
    return "*" in allowed or value in allowed


@dataclass(frozen=True)
class Attributes:
    """What a request does, as RBAC sees it."""

    verb: str
    group: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""


def parse_policies(raw: dict[str, Any]) -> dict[str, User]:
    return {token: User.model_validate(value) for token, value in raw.items()}


def user_for(policies: dict[str, User], authorization: str | None) -> User:
    if authorization and authorization.lower().startswith("bearer "):
        return policies.get(authorization[7:].strip(), ADMIN)
    return ADMIN


def allowed(user: User, attrs: Attributes) -> bool:
    return user.rules is None or any(rule.allows(attrs) for rule in user.rules)


def authorize(user: User, attrs: Attributes) -> None:
    """Raise 403 with the apiserver's message when ``user`` may not do ``attrs``."""
    if allowed(user, attrs):
        return
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    target = f'{resource} "{attrs.name}"' if attrs.name else resource
    scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    err: ApiError = forbidden(
        f'{target} is forbidden: User "{user.user}" cannot {attrs.verb} resource '
        f'"{resource}" in API group "{attrs.group}" {scope}'
    )
    err.details = {"name": attrs.name, "group": attrs.group, "kind": attrs.resource}
    raise err


def access_review(user: User, review: dict[str, Any]) -> dict[str, Any]:
    """Fill ``status`` of a SelfSubjectAccessReview for ``user``."""
    spec = review.get("spec") or {}
    ra = spec.get("resourceAttributes")
    if ra is None:
        ok = user.rules is None or bool(spec.get("nonResourceAttributes"))
    else:
        ok = allowed(
            user,
            Attributes(
                verb=ra.get("verb", ""),
                group=ra.get("group", ""),
                resource=ra.get("resource", ""),
                namespace=ra.get("namespace", ""),
                name=ra.get("name", ""),
                subresource=ra.get("subresource", ""),
            ),
        )
    status: dict[str, Any] = {"allowed": ok}
    if ok and user.rules is not None:
        status["reason"] = f'allowed by lab policy for user "{user.user}"'
    return {**review, "metadata": review.get("metadata") or {}, "status": status}
