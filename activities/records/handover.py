"""Step 8: the connection sheet and the capacity contract the tenant receives, with the smoke tests' evidence
(step 7: what ran, on which nodes, the figures, and how a check that does not apply to the tenant was handled)."""

from __future__ import annotations

from tenantflow.activities.common.registered import defn
from tenantflow.models import runbook
from tenantflow.models.hostlist import compress_hostlist
from tenantflow.models.onboarding import Handover, SmokeEvidence, StepInput
from tenantflow.models.sku import lookup_sku
from tenantflow.models.tenant import TenantContract
from tenantflow.models.units import parse_size


def _wall(text: str) -> str:
    if text == "UNLIMITED":
        return "no limit"
    days, _, clock = text.rpartition("-")
    hours = int(clock.split(":")[0]) + 24 * int(days or 0)
    return f"{hours}h"


def capacity_contract(contract: TenantContract, nodes: list[str]) -> dict[str, object]:
    return {
        "GrpTRES": f"gres/gpu={contract.capacity.gpus}",
        "GrpJobs": contract.slurm.grp_jobs,
        "partition": contract.slug,
        "partition_nodes": compress_hostlist(nodes),
        "scratch_quota": contract.storage.scratch.hard,
        "home_quota_per_user": contract.storage.home_per_user.hard,
        "user_budget_gpu_minutes": contract.user_budget_gpu_minutes,
        "wall_limit_normal": contract.slurm.normal_qos.max_wall,
        "wall_limit_interactive": contract.slurm.interactive_qos.max_wall,
    }


def ssh_snippet(contract: TenantContract, user: str) -> list[str]:
    """The runbook's ``~/.ssh/config`` snippet (step 5c) for one user, as a fenced block."""
    return [
        "```",
        f"# ~/.ssh/config snippet for {contract.slug}",
        f"Host login-{contract.short}",
        f"    HostName       {contract.login_hostname}",
        "    Port           22",
        f"    User           {user}",
        "    IdentityFile   ~/.ssh/id_ed25519",
        "    ServerAliveInterval 30",
        "    ServerAliveCountMax 4",
        "```",
    ]


def smoke_line(proof: SmokeEvidence) -> str:
    """One smoke check as a line of the sheet: what ran where and what it measured, or why it did not run."""
    if not proof.ran:
        return f"- {proof.check}: {proof.state}: {proof.note}"
    where = f" on {', '.join(proof.nodes)}" if proof.nodes else ""
    job = f"job {proof.job_id} " if proof.job_id is not None else ""
    figures = "; ".join(f"{key} {value}" for key, value in proof.figures.items())
    return f"- {proof.check}: {proof.ran}{where} ({job}{proof.state})" + (f": {figures}" if figures else "")


def render_markdown(contract: TenantContract, nodes: list[str], smoke: list[SmokeEvidence] | None = None) -> str:
    sku = lookup_sku(contract.capacity.sku)
    scratch_tb = parse_size(contract.storage.scratch.hard) / 10**12
    lines = [
        f"# Connection sheet: {contract.slug}",
        "",
        "```",
        f"Tenant: {contract.slug}",
        f"Login host: {contract.login_hostname} (port 22)",
        f"Users: {', '.join(contract.usernames)}",
        "",
        f"Slurm partition: {contract.slug}",
        f"Slurm account:    {contract.user_account}",
        f"Default QoS:      {contract.normal_qos_name}",
        f"Interactive QoS:  {contract.interactive_qos_name}  (--qos={contract.interactive_qos_name})",
        "",
        f"GPU pool:    {len(nodes)}x {sku.gpu_model} nodes ({contract.capacity.gpus} GPUs total)",
        f"Wall limit:  {_wall(contract.slurm.normal_qos.max_wall)} normal, "
        f"{_wall(contract.slurm.interactive_qos.max_wall)} interactive",
        "",
        "Filesystems:",
        f"  /home/<user>      {contract.storage.home_per_user.hard} / user, backed up nightly",
        f"  /scratch/{contract.slug}   {scratch_tb:g} TB shared, no backup",
        "",
        "Container runtime: pyxis + enroot",
        "  Example: srun --container-image=docker://pytorch/pytorch:2.4-cuda ...",
        "```",
        "",
        "## SSH config",
        "",
        f"Each user adds their snippet to `~/.ssh/config`, connects with `ssh login-{contract.short}` and lands "
        "in their home directory.",
    ]
    for user in contract.usernames:
        lines += ["", f"### {user}", "", *ssh_snippet(contract, user)]
    lines += [
        "",
        "## Capacity contract",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in capacity_contract(contract, nodes).items()]
    if smoke:
        lines += ["", "## Smoke tests", "", *(smoke_line(proof) for proof in smoke)]
    lines += ["", "## Escalation", "", "First response: 1 hour in business hours, 4 hours otherwise (on-call rota)."]
    return "\n".join(lines) + "\n"


@defn(runbook.HANDOVER)
def render(inp: StepInput) -> Handover:
    contract, nodes = inp.contract, inp.facts.nodes
    sheet: dict[str, object] = {
        "tenant": contract.slug,
        "login_host": contract.login_hostname,
        "login_port": 22,
        "users": contract.usernames,
        "slurm": {
            "partition": contract.slug,
            "account": contract.user_account,
            "default_qos": contract.normal_qos_name,
            "interactive_qos": contract.interactive_qos_name,
        },
        "gpu_pool": {
            "nodes": len(nodes),
            "gpu_model": lookup_sku(contract.capacity.sku).gpu_model,
            "gpus": contract.capacity.gpus,
            "node_list": compress_hostlist(nodes),
        },
        "filesystems": {
            "/home/<user>": contract.storage.home_per_user.hard,
            f"/scratch/{contract.slug}": contract.storage.scratch.hard,
        },
        "smoke": [proof.model_dump(mode="json") for proof in inp.facts.smoke_evidence],
    }
    return Handover(
        markdown=render_markdown(contract, nodes, inp.facts.smoke_evidence),
        sheet=sheet,
        capacity_contract=capacity_contract(contract, nodes),
    )


ACTIVITIES = [render]
