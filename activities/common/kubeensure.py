"""Idempotent ensure, plan and undo of Kubernetes objects rendered by :mod:`activities.common.manifests`.

Objects are read and written through :class:`activities.common.kubeobjects.KubeObjects`
(JSON merge patches). :func:`ensure` reads the object, compares the
fields we own (everything the manifest sets, except the name), and creates,
patches (``updated``; ``adopted`` when the object was not ours yet) or leaves it
(``unchanged``). Updated and adopted results keep the previous values of the owned
fields as :class:`models.results.KubeBefore` so :func:`undo` can put them back;
a create records the object's uid and :data:`CREATED_ANNOTATION`, an adoption :data:`ADOPTED_ANNOTATION`, and a
created object is deleted only by identity (:func:`delete_created`: the recorded uid as the delete's precondition). The
comparisons (:func:`owned`, :func:`matches`, :func:`before_values`, :func:`merge_patch_for`,
:func:`plan_action`) are pure functions of the manifests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes.utils import parse_quantity
from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KINDS, KubeObjects
from tenantflow.activities.common.manifests import (
    ADOPTED_ANNOTATION,
    CREATED_ANNOTATION,
    MANAGED_BY,
    MANAGER,
    RUN_ANNOTATION,
    TENANT_LABEL,
    Manifest,
)
from tenantflow.activities.common.runs import this_run
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Kept, KubeBefore, Outcome, WekaObject


# ---------------------------------------------------------------- comparing owned fields
def owned(desired: Manifest) -> Manifest:
    """The fields of a manifest we own: labels, annotations and everything outside metadata."""
    meta = desired.get("metadata", {})
    out: Manifest = {k: v for k, v in desired.items() if k not in ("metadata", "apiVersion", "kind")}
    picked = {key: meta[key] for key in ("labels", "annotations") if meta.get(key)}
    if picked:
        out["metadata"] = picked
    return out


RESOURCE_LISTS = frozenset({"hard", "requests", "limits", "max", "min", "default", "defaultRequest"})
"""Keys whose map is a ``ResourceList`` (``map[ResourceName]resource.Quantity`` in k8s.io/api core/v1 types.go:
ResourceQuota ``spec.hard``, LimitRange items' ``max``/``min``/``default``/``defaultRequest``, a claim's or a
container's ``resources.requests``/``limits``). kube-apiserver stores a Quantity in its canonical form
(``8192Gi`` reads back as ``8Ti``), so values there are compared by amount, not spelling."""


def same_value(want: Any, have: Any, quantity: bool) -> bool:
    """``want == have``; for a ``quantity`` leaf also the same amount (``8192Gi`` and ``8Ti``), parsed with the
    kubernetes client's ``parse_quantity``."""
    if want == have:
        return True
    if not quantity or isinstance(want, bool) or isinstance(have, bool):
        return False
    if not isinstance(want, (str, int)) or not isinstance(have, (str, int)):
        return False
    try:
        return bool(parse_quantity(want) == parse_quantity(have))
    except ValueError:
        return False


def quantity_child(key: str, value: Any, in_resource_list: bool) -> bool:
    """Whether ``value`` under ``key`` is compared as a quantity: a leaf of a ResourceList, or a ResourceList."""
    return key in RESOURCE_LISTS if isinstance(value, dict) else in_resource_list


def equal(want: Any, have: Any, in_resource_list: bool = False) -> bool:
    """Exact structural equality (list items and their keys included), quantities compared by amount."""
    if isinstance(want, dict):
        return (
            isinstance(have, dict)
            and want.keys() == have.keys()
            and all(equal(v, have[k], quantity_child(k, v, in_resource_list)) for k, v in want.items())
        )
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(want) == len(have)
            and all(equal(w, h, in_resource_list) for w, h in zip(want, have, strict=True))
        )
    return same_value(want, have, in_resource_list)


def matches(want: Any, have: Any, in_resource_list: bool = False) -> bool:
    """True when every key of ``want`` (recursively; lists compared whole) has the same value in ``have``,
    quantities by amount (:data:`RESOURCE_LISTS`)."""
    if isinstance(want, dict):
        if not want:
            return have in (None, {})
        return isinstance(have, dict) and all(
            matches(v, have.get(k), quantity_child(k, v, in_resource_list)) for k, v in want.items()
        )
    return equal(want, have, in_resource_list)


def before_values(want: Manifest, have: Manifest) -> Manifest:
    """The current values at every leaf path of ``want`` (``None`` where absent): a merge patch to go back."""
    out: Manifest = {}
    for key, value in want.items():
        current = have.get(key) if isinstance(have, dict) else None
        if isinstance(value, dict) and value:
            out[key] = before_values(value, current if isinstance(current, dict) else {})
        else:
            out[key] = current
    return out


def merge_patch_for(want: Manifest, have: Any) -> Manifest:
    """``want`` as a JSON merge patch that leaves ``have`` matching it (:func:`matches`): an empty map in ``want``
    (a NetworkPolicy's ``podSelector: {}``, every pod) also removes the keys ``have`` holds there, which ``{}``
    alone would keep (RFC 7386: merging an empty object changes nothing)."""
    out: Manifest = {}
    for key, value in want.items():
        current = have.get(key) if isinstance(have, dict) else None
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge_patch_for(value, current) if value else dict.fromkeys(current)
        else:
            out[key] = value
    return out


def is_ours(obj: Manifest, slug: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY) == MANAGER and labels.get(TENANT_LABEL) == slug


def foreign_owner(obj: Manifest, slug: str) -> str | None:
    """The other tenant an object belongs to, from our tenant label or the namespace ``tenant`` label."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key in (TENANT_LABEL, "tenant"):
        if labels.get(key) and labels[key] != slug:
            return str(labels[key])
    return None


def _ref(desired: Manifest) -> tuple[str, str, str | None]:
    meta = desired["metadata"]
    return desired["kind"], meta["name"], meta.get("namespace")


def describe(kind: str, name: str, namespace: str | None) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def plan_action(existing: Manifest | None, desired: Manifest, slug: str) -> Action:
    if existing is None:
        return Action.create
    if not is_ours(existing, slug):
        return Action.adopt
    return Action.unchanged if matches(owned(desired), existing) else Action.update


def plan_step(
    objs: KubeObjects, layer: str, desired: Manifest, slug: str, detail: dict[str, Any] | None = None
) -> PlanStep:
    kind, name, namespace = _ref(desired)
    existing = objs.get(kind, name, namespace)
    return PlanStep(
        layer=layer,
        kind=kind,
        name=name,
        namespace=namespace,
        action=plan_action(existing, desired, slug),
        detail=detail or {},
    )


def ensure(
    objs: KubeObjects,
    layer: str,
    desired: Manifest,
    slug: str,
    run_id: str,
    claimed_by: Callable[[Manifest], str | None] | None = None,
    public_payload: bool = False,
) -> EnsureResult:
    """Read, compare the owned fields, then create, patch or leave the object. An updated or adopted object's
    previous owned values are the undo state (:func:`undo_fields`: never a Secret's payload unless
    ``public_payload``)."""
    kind, name, namespace = _ref(desired)
    existing = objs.get(kind, name, namespace)
    result = EnsureResult(layer=layer, kind=kind, name=name, namespace=namespace, outcome=Outcome.unchanged)
    stamp = {"metadata": {"annotations": {RUN_ANNOTATION: run_id}}} if run_id else {}
    if existing is None:
        created_by = {"metadata": {"annotations": {CREATED_ANNOTATION: run_id}}} if run_id else {}
        made = objs.create(_merge(desired, created_by, stamp))
        uid = str((made.get("metadata") or {}).get("uid") or "")
        return result.model_copy(update={"outcome": Outcome.created, **({"data": WekaObject(uid=uid)} if uid else {})})
    other = (claimed_by or (lambda obj: foreign_owner(obj, slug)))(existing)
    if other is not None:
        raise fail(
            "Conflict",
            f"{describe(kind, name, namespace)} already exists and belongs to {other}; "
            "pick another tenant slug or remove the other object",
        )
    want = owned(desired)
    if is_ours(existing, slug) and matches(want, existing):
        return result
    outcome = Outcome.updated if is_ours(existing, slug) else Outcome.adopted
    if outcome is Outcome.adopted and stamp:
        want = _merge(want, stamp, {"metadata": {"annotations": {ADOPTED_ANNOTATION: run_id}}})
    before = before_values(undo_fields(kind, want, public_payload), existing)
    objs.patch(kind, name, namespace, merge_patch_for(want, existing))
    return result.model_copy(update={"outcome": outcome, "data": KubeBefore(before=before)})


SECRET_PAYLOAD = ("data", "stringData")


def undo_fields(kind: str, want: Manifest, public_payload: bool) -> Manifest:
    """The owned fields whose previous values an undo keeps: a Secret's payload only when the caller says it is
    public (the authorized-keys Secret holds public keys). Any other Secret's old ``data`` would land in the
    activity result, the workflow history, the run result and the tenant record (base64 is no protection); its
    undo puts the labels and annotations back and leaves the data, which the source of truth (the platform's
    bind Secret, say, after a password rotation) owns."""
    if kind != "Secret" or public_payload:
        return want
    return {key: value for key, value in want.items() if key not in SECRET_PAYLOAD}


def _merge(base: Manifest, *extras: Manifest) -> Manifest:
    out = dict(base)
    for extra in extras:
        for key, value in extra.items():
            out[key] = _merge(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def undo(objs: KubeObjects, layer: str, results: list[EnsureResult], slug: str) -> list[EnsureResult]:
    """Delete what was created (while still ours), put back what was updated or adopted; latest first."""
    done: list[EnsureResult] = []
    for res in reversed(results):
        if res.kind not in KINDS or res.outcome not in (Outcome.created, Outcome.updated, Outcome.adopted):
            continue
        existing = objs.get(res.kind, res.name, res.namespace)
        base = EnsureResult(layer=layer, kind=res.kind, name=res.name, namespace=res.namespace, outcome=Outcome.absent)
        if existing is None or (existing.get("metadata") or {}).get("deletionTimestamp"):
            done.append(base)
        elif res.outcome is Outcome.created:
            done.append(delete_created(objs, existing, res, slug, base))
        else:
            before = res.data_as(KubeBefore).before
            if matches_before(before, existing):
                done.append(base.model_copy(update={"outcome": Outcome.unchanged}))
                continue
            objs.patch(res.kind, res.name, res.namespace, before)
            done.append(base.model_copy(update={"outcome": Outcome.updated}))
    return done


def unproven(existing: Manifest, result: EnsureResult, slug: str) -> str:
    """Why ``existing`` cannot be shown to be the object ``result`` created ("" when it can): the uid its create
    recorded; without one (a create whose answer was lost, a planned creation of a failed step), this workflow's
    :data:`CREATED_ANNOTATION`, which no adoption writes. In the tenant's approved teardown (``TenantOffboarding``,
    which has no record of the creates) the tenant's labels, unless an adoption's :data:`ADOPTED_ANNOTATION` says
    someone else made it."""
    meta = existing.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    recorded = result.data.uid if isinstance(result.data, WekaObject) else None
    if recorded:
        return "" if meta.get("uid") == recorded else f"its uid is {meta.get('uid')}, not {recorded} this run created"
    if not is_ours(existing, slug):
        return "it does not carry this tenant's labels"
    if annotations.get(ADOPTED_ANNOTATION):
        return f"{ADOPTED_ANNOTATION}={annotations[ADOPTED_ANNOTATION]}: adopted, someone else made it"
    teardown = activity.in_activity() and activity.info().workflow_type == "TenantOffboarding"
    if teardown or (this_run() and annotations.get(CREATED_ANNOTATION) == this_run()):
        return ""
    return f"no uid recorded and {CREATED_ANNOTATION}={annotations.get(CREATED_ANNOTATION)!r} is not this workflow"


def delete_created(
    objs: KubeObjects, existing: Manifest, result: EnsureResult, slug: str, base: EnsureResult
) -> EnsureResult:
    """Delete an object ``result`` created, by identity: only when :func:`unproven` finds no reason against it, and
    with ``preconditions.uid`` (DeleteOptions, https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/
    delete-options/), so an object replaced since the read is left too (409 Conflict). Anything left is reported
    unchanged with why (:class:`Kept`)."""
    why = unproven(existing, result, slug)
    uid = str((existing.get("metadata") or {}).get("uid") or "") or None
    if not why:
        try:
            gone = objs.delete(result.kind, result.name, result.namespace, uid=uid)
            return base.model_copy(update={"outcome": Outcome.deleted if gone else Outcome.absent})
        except ApplicationError as err:
            if err.type != "Conflict":
                raise
            why = f"replaced since it was read ({err})"
    kept = f"{describe(result.kind, result.name, result.namespace)} left alone: {why}"
    return base.model_copy(update={"outcome": Outcome.unchanged, "data": Kept(kept=kept)})


def matches_before(before: Manifest, have: Any) -> bool:
    """True when ``have`` already holds the ``before`` values (``None`` meaning absent)."""
    for key, value in before.items():
        current = have.get(key) if isinstance(have, dict) else None
        if isinstance(value, dict):
            if not matches_before(value, current if isinstance(current, dict) else {}):
                return False
        elif value != current:
            return False
    return True
