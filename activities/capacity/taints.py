"""Node taints against the tolerations a tenant's pods carry: which taints keep them off a node.

Kubernetes' rules ("Taints and Tolerations",
https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/): a toleration matches a taint when
the keys are equal (an empty key with ``Exists`` matches every key), the effects are equal (an empty effect matches
every effect), and the operator is ``Exists`` or ``Equal`` with equal values. A ``NoSchedule`` or ``NoExecute``
taint no toleration matches keeps the pod off the node; ``PreferNoSchedule`` is only a preference.

A tenant's pods carry the toleration the ReservationBinding injects for its Reservation's taint
(``reserved.tenant=<slug>``, :func:`activities.common.manifests.reservation_binding`: ``injectToleration``), and
the two every pod gets from the DefaultTolerationSeconds admission plugin (``node.kubernetes.io/not-ready`` and
``node.kubernetes.io/unreachable``, ``NoExecute``, for 300 s;
https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#defaulttolerationseconds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenantflow.activities.common import manifests

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""The effects that keep a pod without a matching toleration off a node."""


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: dict[str, Any]) -> bool:
        if self.effect and self.effect != taint.get("effect"):
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.get("key")
        return self.key == taint.get("key") and self.value == (taint.get("value") or "")


def tenant_tolerations(slug: str) -> tuple[Toleration, ...]:
    """The tolerations every pod of tenant ``slug`` carries (see the module docstring)."""
    return (
        Toleration(key=manifests.RESERVED_LABEL, value=slug),
        Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
        Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    )


def spelled(taint: dict[str, Any]) -> str:
    """A taint as ``kubectl taint`` writes it: ``key=value:Effect`` (``key:Effect`` without a value)."""
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + str(value) if value else ''}:{taint.get('effect')}"


def untolerated(node: dict[str, Any], slug: str) -> list[str]:
    """The ``NoSchedule``/``NoExecute`` taints of ``node`` that tenant ``slug``'s pods do not tolerate."""
    tolerations = tenant_tolerations(slug)
    return [
        spelled(taint)
        for taint in (node.get("spec") or {}).get("taints") or []
        if taint.get("effect") in BLOCKING_EFFECTS and not any(t.tolerates(taint) for t in tolerations)
    ]
