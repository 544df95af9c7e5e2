"""What a run says about itself in the Temporal UI: a one-line static summary and Markdown static details.

The UI shows the summary in the run list and on the run page, and the details
on the run page (User Metadata): what the run does, to which target, and who
started it (the Temporal client's identity). Names, commands and values are
Markdown code spans, so the UI shows them verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.tenant import TenantContract


@dataclass(frozen=True)
class RunDescription:
    """The ``static_summary`` and ``static_details`` a run is started with."""

    summary: str
    details: str


def _details(headline: str, facts: dict[str, str], started_by: str) -> str:
    lines = [headline, ""]
    lines += [f"- {label}: {value}" for label, value in {**facts, "started by": f"`{started_by}`"}.items()]
    return "\n".join(lines)


def _tenant_facts(contract: TenantContract) -> dict[str, str]:
    capacity = contract.capacity
    return {
        "cluster": f"context `{contract.cluster.context}`",
        "capacity": f"{capacity.gpus} GPUs of `{capacity.sku}` from pool `{capacity.hardware_pool}` "
        f"({capacity.partition_type.value}, {capacity.term_days} days)",
        "users": ", ".join(f"`{user}`" for user in contract.usernames),
        "login host": f"`{contract.login_hostname}`",
    }


def onboarding(contract: TenantContract, started_by: str) -> RunDescription:
    summary = (
        f"Onboard {contract.slug}: {contract.capacity.gpus} GPUs {contract.capacity.sku}, "
        f"{len(contract.usernames)} users"
    )
    headline = (
        f"Onboards tenant `{contract.slug}` ({contract.display_name}): preflight, a plan to approve, "
        "then every layer, smoke tests and the handover sheet."
    )
    return RunDescription(summary, _details(headline, _tenant_facts(contract), started_by))


def change(contract: TenantContract, previous: TenantContract, started_by: str) -> RunDescription:
    gpus = f"{previous.capacity.gpus} -> {contract.capacity.gpus} GPUs"
    users = f"{len(previous.usernames)} -> {len(contract.usernames)} users"
    summary = f"Change {contract.slug}: {gpus}, {users}"
    headline = (
        f"Changes tenant `{contract.slug}` ({contract.display_name}) from its recorded contract: a plan of the "
        "creates, updates and removals to approve, then every layer, validation and a new tenant record."
    )
    return RunDescription(summary, _details(headline, _tenant_facts(contract), started_by))


def offboarding(contract: TenantContract, purge_data: bool, started_by: str) -> RunDescription:
    data = "Weka data purged after confirm_purge" if purge_data else "Weka data kept"
    summary = f"Offboard {contract.slug} ({data})"
    headline = (
        f"Offboards tenant `{contract.slug}` ({contract.display_name}): reads every layer, a teardown "
        f"plan to approve, then removal in rollback order; {data}."
    )
    return RunDescription(summary, _details(headline, _tenant_facts(contract), started_by))


def _workercluster_facts(contract: WorkerEnrollment) -> dict[str, str]:
    return {
        "hub": f"context `{contract.hub.context}`, namespace `{contract.tenant_namespace}`",
        "worker cluster": f"context `{contract.worker.context}`",
        "workload namespaces": ", ".join(f"`{ns}`" for ns in contract.workload_namespaces),
        "mode": "brownfield (running work is adopted)" if contract.brownfield else "greenfield",
    }


def enrollment(contract: WorkerEnrollment, started_by: str) -> RunDescription:
    mode = "brownfield" if contract.brownfield else "greenfield"
    summary = f"Enroll worker {contract.worker_name} into {contract.tenant_namespace} ({mode})"
    headline = (
        f"Enrolls worker cluster `{contract.worker_name}` into the Hub namespace "
        f"`{contract.tenant_namespace}`: preflight, a bootstrap plan to approve, the four conditions, "
        "a canary."
    )
    return RunDescription(summary, _details(headline, _workercluster_facts(contract), started_by))


def decommission(contract: WorkerEnrollment, started_by: str) -> RunDescription:
    summary = f"Decommission worker {contract.worker_name} from {contract.tenant_namespace}"
    headline = (
        f"Decommissions worker cluster `{contract.worker_name}` of the Hub namespace "
        f"`{contract.tenant_namespace}`: cordon, drain, remove from the Hub, then a reset plan to approve."
    )
    return RunDescription(summary, _details(headline, _workercluster_facts(contract), started_by))
