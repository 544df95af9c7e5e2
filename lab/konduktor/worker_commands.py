"""The stand-in's worker commands: ``worker bootstrap BLOB`` (plan, prompt, install) and ``worker reset``.

Bootstrap installs the agent's namespaces, RBAC, ServiceAccount and Deployment and a ``trainy-bootstrap``
Secret with the redemption token; the lab's worker agent (:mod:`lab.controllers.worker_agent`) redeems it and
installs the rest of :data:`BOOTSTRAP_COMPONENTS`. Reset deletes what carries
``trainy.ai/installed-by=konduktor`` and releases the preset objects Konduktor manages; Kueue and JobSet
objects, customer workloads, cert-manager and a shared VictoriaMetrics operator stay.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from tenantflow.lab.konduktor import blob, registration
from tenantflow.lab.konduktor.facts import (
    AGENT,
    AGENT_NAMESPACE,
    BOOTSTRAP_COMPONENTS,
    BOOTSTRAP_SECRET,
    BYOC_NAMESPACE,
    INSTALLED_BY,
    INSTALLER,
    MANAGED_BY,
    SCHEDULING_MANAGER,
    VM_OPERATOR_LABEL,
    WORKER_LABEL,
)
from tenantflow.lab.konduktor.rest import Rest, path
from tenantflow.lab.kueue_facts import JOBSET_DEPLOYMENT, KUEUE_DEPLOYMENT
from tenantflow.lab.workloads import deployment

Obj = dict[str, Any]
KINDS = {
    "Namespace": ("v1", "namespaces"),
    "ServiceAccount": ("v1", "serviceaccounts"),
    "Secret": ("v1", "secrets"),
    "Deployment": ("apps/v1", "deployments"),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
}
PRESET_KINDS = (
    ("resourceflavors", "ResourceFlavor", False),
    ("clusterqueues", "ClusterQueue", False),
    ("admissionchecks", "AdmissionCheck", False),
    ("provisioningrequestconfigs", "ProvisioningRequestConfig", False),
    ("localqueues", "LocalQueue", True),
)
AGENT_RULES = [
    {"apiGroups": ["kueue.x-k8s.io", "jobset.x-k8s.io"], "resources": ["*"], "verbs": ["*"]},
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "watch", "create", "update", "patch"],
    },
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "create"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "update", "patch"]},
]


def ref(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def object_path(kind: str, namespace: str | None, name: str | None = None) -> str:
    api_version, plural = KINDS[kind]
    return path(api_version, plural, name, namespace)


def _labels(component: str) -> dict[str, str]:
    return {INSTALLED_BY: INSTALLER, "trainy.ai/component": component}


def _cli_objects(token: str) -> list[Obj]:
    """What the CLI itself creates (the agent installs the rest)."""

    def meta(name: str, component: str, namespace: str | None = None) -> Obj:
        return {"name": name, **({"namespace": namespace} if namespace else {}), "labels": _labels(component)}

    rbac = "rbac.authorization.k8s.io/v1"
    agent = deployment(AGENT_NAMESPACE, AGENT, "ghcr.io/trainy-ai/worker-agent:v1", _labels("agent"))
    agent["spec"]["template"]["spec"]["serviceAccountName"] = AGENT
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(AGENT_NAMESPACE, "agent")},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(BYOC_NAMESPACE, "observability")},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(AGENT, "agent", AGENT_NAMESPACE)},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": meta(AGENT, "rbac"), "rules": AGENT_RULES},
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": meta(AGENT, "rbac"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT},
            "subjects": [{"kind": "ServiceAccount", "name": AGENT, "namespace": AGENT_NAMESPACE}],
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": meta(BOOTSTRAP_SECRET, "bootstrap", AGENT_NAMESPACE),
            "data": {"token": base64.b64encode(token.encode()).decode()},
        },
        agent,
    ]


Entry = tuple[str, str, str | None, str, str]
"""(action, kind, namespace, name, why) of one line of a plan."""


def _shared_operators(worker: Rest) -> list[Entry]:
    return [
        (
            "leave",
            "Deployment",
            d["metadata"]["namespace"],
            d["metadata"]["name"],
            "shared VictoriaMetrics operator is preserved",
        )
        for d in worker.list("/apis/apps/v1/deployments", VM_OPERATOR_LABEL)
    ]


def runbook_lines(entries: list[Entry]) -> list[str]:
    """The runbook dialect: ``<action> <Kind> <namespace/name|name> [# why]``."""
    return [f"{action} {ref(k, ns, n)}" + (f" # {why}" if why else "") for action, k, ns, n, why in entries]


def bootstrap_plan(worker: Rest, table: bool = False) -> list[str]:
    """The plan ``worker bootstrap`` shows: runbook lines, or in the second dialect (``table``) a title, the API
    server, a table of ``Install``/``Present``/``Keep`` rows and a count."""
    entries: list[Entry] = [
        ("exists" if worker.get(object_path(k, ns, n)) is not None else "create", k, ns, n, "")
        for k, ns, n in BOOTSTRAP_COMPONENTS
    ]
    if not table:
        return runbook_lines(entries) + runbook_lines(_shared_operators(worker))
    entries += _shared_operators(worker)
    verbs = {"create": "Install", "exists": "Present", "leave": "Keep"}
    rows = [("ACTION", "KIND", "NAMESPACE", "NAME", "NOTE")]
    rows += [(verbs[action], kind, ns or "-", name, why) for action, kind, ns, name, why in entries]
    count = {verb: sum(1 for row in rows[1:] if row[0] == verb) for verb in verbs.values()}
    return [
        "Konduktor worker bootstrap",
        f"  API server: {worker.server}",
        "",
        *_aligned(rows),
        "",
        f"{count['Install']} to install, {count['Present']} already present, {count['Keep']} kept.",
        "The worker agent installs the tunnel credentials, log collector and metrics agent after it redeems "
        "the enrollment.",
    ]


def _aligned(rows: list[tuple[str, str, str, str, str]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    return [
        "   ".join(cell.ljust(width) for cell, width in zip(row, [*widths, 0], strict=True)).rstrip() for row in rows
    ]


def bootstrap(worker: Rest, the_blob: str, confirm: Callable[[list[str]], bool], table: bool = False) -> list[str]:
    """Show the plan, ask ``confirm``, then install; the private key never leaves this process."""
    token = blob.redemption_token(the_blob)
    plan = bootstrap_plan(worker, table)
    if not confirm(plan):
        return ["bootstrap aborted: nothing was changed"]
    done = []
    for obj in _cli_objects(token):
        meta = obj["metadata"]
        where = object_path(obj["kind"], meta.get("namespace"), meta["name"])
        if worker.get(where) is None:
            worker.create(object_path(obj["kind"], meta.get("namespace")), obj)
            done.append(f"created {ref(obj['kind'], meta.get('namespace'), meta['name'])}")
    return [
        *done,
        "bootstrap applied: the worker agent redeems the enrollment and installs the tunnel "
        "credentials, log collector and metrics agent",
        *registration.await_registration(worker),
    ]


def _installed(worker: Rest) -> list[tuple[str, str | None, str]]:
    selector = f"{INSTALLED_BY}={INSTALLER}"
    found: list[tuple[str, str | None, str]] = []
    for namespace in (AGENT_NAMESPACE, BYOC_NAMESPACE):
        for kind in ("Deployment", "Secret", "ServiceAccount"):
            found += [
                (kind, namespace, o["metadata"]["name"]) for o in worker.list(object_path(kind, namespace), selector)
            ]
    for kind in ("ClusterRoleBinding", "ClusterRole", "Namespace"):
        found += [(kind, None, o["metadata"]["name"]) for o in worker.list(object_path(kind, None), selector)]
    return found


def _managed_preset(worker: Rest) -> list[tuple[str, str, str | None, str]]:
    """(path, kind, namespace, name) of every Kueue preset object Konduktor manages, at the served version."""
    version = worker.preferred_version("kueue.x-k8s.io")
    if version is None:
        return []
    selector = f"{MANAGED_BY}={SCHEDULING_MANAGER}"
    found = []
    for plural, kind, _ in PRESET_KINDS:
        for obj in worker.list(path(f"kueue.x-k8s.io/{version}", plural), selector):
            meta = obj["metadata"]
            found.append(
                (
                    path(f"kueue.x-k8s.io/{version}", plural, meta["name"], meta.get("namespace")),
                    kind,
                    meta.get("namespace"),
                    meta["name"],
                )
            )
    return found


TABLE_VERBS = {"delete": "Delete", "release": "Release", "leave": "Keep"}


def table_lines(entries: list[Entry], dry_run: bool) -> list[str]:
    """The table dialect: a title, a header, one aligned row per object (``-`` for no namespace), a count."""
    rows = [("ACTION", "KIND", "NAMESPACE", "NAME", "NOTE")]
    rows += [(TABLE_VERBS[action], kind, ns or "-", name, why) for action, kind, ns, name, why in entries]
    body = _aligned(rows)
    count = {action: sum(1 for entry in entries if entry[0] == action) for action in TABLE_VERBS}
    total = f"{count['delete']} to delete, {count['release']} to release, {count['leave']} kept."
    if dry_run:
        return ["Worker reset plan (dry run)", "", *body, "", f"{total} Nothing was changed."]
    return ["Worker reset", "", *body, "", total]


def reset(worker: Rest, dry_run: bool, table: bool = False) -> list[str]:
    """The objects reset deletes, releases and leaves, in the runbook dialect or as a ``table``; without
    ``dry_run`` it deletes and releases them."""
    installed, preset = _installed(worker), _managed_preset(worker)
    entries: list[Entry] = [("delete", k, ns, n, "") for k, ns, n in installed]
    entries += [
        ("release", k, ns, n, "ownership labels removed; object kept" if table else "") for _, k, ns, n in preset
    ]
    entries += _shared_operators(worker)
    entries += [
        ("leave", "Deployment", ns, n, why)
        for ns, n, why in (
            (*KUEUE_DEPLOYMENT, "Kueue"),
            (*JOBSET_DEPLOYMENT, "JobSet"),
            ("cert-manager", "cert-manager", "cert-manager"),
        )
        if worker.get(object_path("Deployment", ns, n)) is not None
    ]
    if table:
        lines = table_lines(entries, dry_run)
    else:
        lines = runbook_lines(entries) + (["dry run: nothing was changed"] if dry_run else [])
    if dry_run:
        return lines
    for kind, namespace, name in installed:
        worker.delete(object_path(kind, namespace, name))
    for where, *_ in preset:
        worker.merge(where, {"metadata": {"labels": {MANAGED_BY: None, WORKER_LABEL: None}}})
    return lines
