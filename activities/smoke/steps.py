"""Smoke tests of runbook step 7: real sbatch jobs in the tenant partition, output checked.

Each test runs one job as the tenant's first user (:mod:`activities.smoke.jobs`) and checks its output:

* 7a: the GPUs the job sees (``nvidia-smi -L``) must be exactly the GPUs Slurm
  allocated to it (``JOB_GRES`` of ``scontrol show job -d``), and a 1-GPU step
  inside it (``srun --gres=gpu:1``) must see exactly 1. The runbook expects 1 for
  ``--gres=gpu:1``; on an ``OverSubscribe=EXCLUSIVE`` partition Slurm allocates
  every GPU of the node to the job, so only the 1-GPU step shows whether the
  device cgroup constrains jobs (``ConstrainDevices=yes``), whatever OverSubscribe.
  A GPU is a line of ``nvidia-smi -L`` that starts with ``GPU ``: with MIG enabled
  the listing adds an indented ``MIG ... Device n: (UUID: MIG-...)`` line under each
  GPU for each of its instances (NVIDIA's MIG User Guide, "Getting Started with MIG").
* 7b: all-reduce busbw at 4 GB against the SKU tier, launched ``srun --mpi=pmix``
  as the runbook does, on 2 of the tenant's nodes. A tenant of one node has no
  second node to reach: it runs the all-reduce on its node alone (one rank per
  GPU, inside the node: NVLink/NVSwitch, or PCIe on the L40S SKU; the tier's
  inter-node figure stays the floor) and records the 2-node test as skipped,
  with why, in its findings and evidence.
* 7c: write and read back ``write_mb`` MiB under ``<scratch_root>/<slug>`` and
  ``df -PT`` it: it must be a Weka mount (``wekafs``), not the root filesystem.
  ``write_mb`` and ``scratch_root`` come from :class:`SmokeSettings` (runbook:
  10 GiB under ``/scratch``; the lab sets a small size and its mount root).

A check that fails is returned as an error finding, never as success. Each test
adds its evidence (what ran, on which nodes, the job, the figures; or why it was
skipped) to ``facts.smoke_evidence``, which the handover sheet shows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.slurm_cli import word
from tenantflow.activities.smoke.jobs import JobRun, submit
from tenantflow.models import runbook
from tenantflow.models.onboarding import SmokeEvidence, StepInput, StepResult
from tenantflow.models.results import Finding
from tenantflow.models.sku import lookup_sku
from tenantflow.models.tenant import TenantContract

BUSBW_TOO_LOW = 0.8
"""A busbw below this fraction of the tier expectation is a finding (runbook: 'dramatically below')."""
FOUR_GB = 4 * 1024**3
WEKA_FS_TYPES = ("wekafs",)
TWO_NODE = "smoke.nccl.two_node"
"""The check that records how the 2-node all-reduce was handled for a tenant of one node."""
NOT_RUN, SKIPPED = "NOT_RUN", "SKIPPED"


class SmokeSettings(BaseSettings):
    """Where the tenant scratch is mounted on the Slurm nodes and how much 7c writes."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    scratch_root: str = Field("/scratch", alias="TENANTFLOW_SMOKE_SCRATCH_ROOT")
    write_mb: int = Field(10240, alias="TENANTFLOW_SMOKE_WRITE_MB", ge=1)


@lru_cache(maxsize=1)
def smoke_settings() -> SmokeSettings:
    return SmokeSettings()


def evidence(check: str, ran: str, job: JobRun, figures: Mapping[str, object], note: str = "") -> SmokeEvidence:
    """What ``job`` ran for ``check``, where, and what it measured (figures not measured are left out)."""
    shown = {key: str(value) for key, value in figures.items() if value is not None}
    return SmokeEvidence(
        check=check, ran=ran, state=job.state, nodes=list(job.nodes), job_id=job.job_id, figures=shown, note=note
    )


def not_run(finding: Finding) -> SmokeEvidence:
    """The evidence of a test whose job could not be submitted: why, from its finding."""
    return SmokeEvidence(check=finding.check, ran="", state=NOT_RUN, note=finding.message)


def _result(inp: StepInput, key: str, value: str, findings: list[Finding], proof: list[SmokeEvidence]) -> StepResult:
    """The facts with this test's state and evidence (replacing what an earlier run of the same checks left)."""
    checks = {e.check for e in proof}
    kept = [e for e in inp.facts.smoke_evidence if e.check not in checks]
    facts = inp.facts.model_copy(update={"smoke": {**inp.facts.smoke, key: value}, "smoke_evidence": [*kept, *proof]})
    return StepResult(facts=facts, findings=findings)


JOB_LISTING, STEP_LISTING = "job", "1-GPU step"
SINGLE_NODE = f"""set -eu
hostname
echo "CUDA_VISIBLE_DEVICES=${{CUDA_VISIBLE_DEVICES:-unset}}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== nvidia-smi -L ({JOB_LISTING})"
nvidia-smi -L
echo "== nvidia-smi -L ({STEP_LISTING})"
srun --ntasks=1 --gres=gpu:1 nvidia-smi -L
echo "== end"
"""


def allocated_gpus(info: dict[str, str]) -> int | None:
    """GPUs Slurm allocated to the job: ``JOB_GRES=gpu:8`` or ``gpu:h100:8`` of ``scontrol show job -d``."""
    match = re.search(r"(?:^|,)gpu(?::[^:,]+)?:(\d+)", info.get("JOB_GRES", ""))
    return int(match.group(1)) if match else None


def listed_gpus(output: str, listing: str) -> int | None:
    """The GPUs of one ``nvidia-smi -L`` listing of :data:`SINGLE_NODE`'s output: its lines that start with
    ``GPU `` (a MIG instance's indented line is not a GPU). None when the listing did not run to its end (the
    next ``== `` line)."""
    lines = output.splitlines()
    header = f"== nvidia-smi -L ({listing})"
    if header not in lines:
        return None
    body = lines[lines.index(header) + 1 :]
    end = next((at for at, line in enumerate(body) if line.startswith("== ")), None)
    return None if end is None else sum(1 for line in body[:end] if line.startswith("GPU "))


def gpu_finding(job: JobRun, requested: int) -> Finding:
    """7a: the job sees exactly the GPUs Slurm allocated to it, and a 1-GPU step inside it sees 1."""
    visible, step = listed_gpus(job.output, JOB_LISTING), listed_gpus(job.output, STEP_LISTING)
    allocated = allocated_gpus(job.info)
    first = job.output.splitlines()[0] if job.output else ""
    if job.state != "COMPLETED" or visible is None or allocated is None or step is None:
        return Finding.failed(
            runbook.SMOKE_SINGLE_NODE.name,
            f"job {job.state}; GPUs visible: {visible}, allocated: {allocated}, "
            f"seen by a 1-GPU step: {step}; output: {job.output.strip()[-300:]}",
            "read the job's slurmd log; check the partition, GRES config and the user's home",
        )
    if visible != allocated or step != 1:
        return Finding.failed(
            runbook.SMOKE_SINGLE_NODE.name,
            f"all GPUs visible to a 1-GPU job: on {first} the job sees {visible} "
            f"GPU(s) of the {allocated} Slurm allocated, a --gres=gpu:1 step sees "
            f"{step}: the device cgroup does not constrain jobs",
            "ConstrainDevices=yes is missing in cgroup.conf: fix it at the SUNK chart level, not per tenant",
        )
    whole_node = (
        f"; --gres=gpu:{requested} got the whole node's {allocated} GPUs (OverSubscribe=EXCLUSIVE partition)"
        if allocated > requested
        else ""
    )
    return Finding.passed(
        runbook.SMOKE_SINGLE_NODE.name,
        f"job on {first} sees exactly its {allocated} allocated GPU(s), a 1-GPU step sees 1{whole_node}",
    )


@defn(runbook.SMOKE_SINGLE_NODE)
def single_node(inp: StepInput) -> StepResult:
    job = submit(inp, "single_node", SINGLE_NODE, 1, ["--gres=gpu:1"])
    if isinstance(job, Finding):
        return _result(inp, "single_node", "NOUSER", [job], [not_run(job)])
    figures = {
        "gpus_allocated": allocated_gpus(job.info),
        "gpus_seen_by_job": listed_gpus(job.output, JOB_LISTING),
        "gpus_seen_by_1_gpu_step": listed_gpus(job.output, STEP_LISTING),
    }
    ran = "sbatch --gres=gpu:1; nvidia-smi -L in the job and in a 1-GPU srun step"
    proof = evidence(runbook.SMOKE_SINGLE_NODE.name, ran, job, figures)
    return _result(inp, "single_node", job.state, [gpu_finding(job, 1)], [proof])


def parse_busbw(output: str, size: int = FOUR_GB) -> float | None:
    """Out-of-place busbw (GB/s) of the all_reduce_perf row for ``size`` bytes."""
    for line in output.splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0] == str(size):
            return float(cols[7])
    return None


NCCL_SCRIPT = "set -eu\nsrun --mpi=pmix all_reduce_perf -b 8 -e 4G -f 2 -g 1\n"


@dataclass(frozen=True)
class AllReduce:
    """One shape of test 7b: how many nodes, what a low busbw points at, and what to do about it."""

    nodes: int
    kind: str
    cause: str
    fix: str


TWO_NODES = AllReduce(
    2,
    "2-node",
    "PCIe ACS left on, IB plane or MTU",
    "run the ACS disable runbook on each tenant node, then network validation (IB plane, MTU), and re-run the smoke "
    "test",
)
ONE_NODE = AllReduce(
    1,
    "single-node",
    "NVLink/NVSwitch degraded or PCIe ACS left on",
    "check the node's NVLink/NVSwitch (nvidia-smi nvlink -s, nvidia-smi topo -m) and that PCIe ACS is off, then "
    "re-run the smoke test",
)


def busbw_finding(job: JobRun, tier: float, shape: AllReduce) -> Finding:
    """7b: the 4 GB row's busbw reaches :data:`BUSBW_TOO_LOW` of the SKU tier."""
    busbw = parse_busbw(job.output)
    ok = job.state == "COMPLETED" and busbw is not None and busbw >= BUSBW_TOO_LOW * tier
    where = f"{shape.kind} all-reduce on {', '.join(job.nodes)}"
    message = (
        f"{where}: busbw {busbw} GB/s at 4 GB (tier {tier} GB/s)"
        if busbw is not None
        else f"{where}: job {job.state}; no 4 GB row in output: {job.output.strip()[-300:]}"
    )
    if busbw is not None and not ok:
        message = f"{where}: busbw {busbw} GB/s at 4 GB is far below the tier's {tier} GB/s: {shape.cause}"
    return Finding.verdict(runbook.SMOKE_NCCL.name, ok, message, shape.fix)


def two_node_skipped(c: TenantContract, nodes: list[str]) -> tuple[Finding, SmokeEvidence]:
    """How the 2-node all-reduce was handled for a tenant of one node: skipped, and why."""
    why = (
        f"{c.slug} has {c.capacity.node_count} node ({c.capacity.gpus} GPUs) and the 2-node all-reduce needs 2 of "
        f"the tenant's nodes: the all-reduce ran on {', '.join(nodes) or 'its node'} alone, inside the node; no job "
        "of this tenant crosses the inter-node fabric"
    )
    return (
        Finding.passed(TWO_NODE, f"2-node all-reduce skipped: {why}"),
        SmokeEvidence(check=TWO_NODE, ran="", state=SKIPPED, note=why),
    )


@defn(runbook.SMOKE_NCCL)
def nccl(inp: StepInput) -> StepResult:
    c = inp.contract
    per_node = c.capacity.gpus_per_node
    shape = ONE_NODE if c.capacity.node_count == 1 else TWO_NODES
    extra = [f"--nodes={shape.nodes}", f"--ntasks-per-node={per_node}", f"--gres=gpu:{per_node}"]
    job = submit(inp, "nccl", NCCL_SCRIPT, shape.nodes, extra)
    if isinstance(job, Finding):
        return _result(inp, "nccl_busbw_gbps", "None", [job], [not_run(job)])
    tier = lookup_sku(c.capacity.sku).tier_busbw_gbps
    busbw = parse_busbw(job.output)
    ran = (
        f"{shape.kind} NCCL all-reduce, {shape.nodes * per_node} ranks: "
        "srun --mpi=pmix all_reduce_perf -b 8 -e 4G -f 2 -g 1"
    )
    figures = {"busbw_gbps_at_4gb": busbw, "tier_busbw_gbps": tier, "floor_gbps": round(BUSBW_TOO_LOW * tier, 2)}
    findings = [busbw_finding(job, tier, shape)]
    proof = [evidence(runbook.SMOKE_NCCL.name, ran, job, figures)]
    if shape is ONE_NODE:
        skipped, why = two_node_skipped(c, list(job.nodes))
        findings.append(skipped)
        proof.append(why)
    return _result(inp, "nccl_busbw_gbps", str(busbw), findings, proof)


def storage_script(path: str, write_mb: int) -> str:
    return (
        f"set -eu\ncd {path}\n"
        f"dd if=/dev/urandom of=smoke.$SLURM_JOB_ID bs=1M count={write_mb} status=none\n"
        f"dd if=smoke.$SLURM_JOB_ID of=/dev/null bs=1M status=none\nrm smoke.$SLURM_JOB_ID\n"
        f"echo WROTE_MB={write_mb}\ndf -PT {path}\n"
    )


def df_row(output: str) -> tuple[str, str] | None:
    """(type, mount point) of the data row that follows ``df -PT``'s header, None without that header."""
    lines = output.splitlines()
    for at, line in enumerate(lines[:-1]):
        header = line.split()
        if header[:2] == ["Filesystem", "Type"] and header[-2:] == ["Mounted", "on"]:
            row = lines[at + 1].split()
            return (row[1], row[6]) if len(row) == 7 else None
    return None


def written_mb(output: str) -> str | None:
    wrote = re.search(r"^WROTE_MB=(\d+)$", output, re.M)
    return wrote.group(1) if wrote else None


def storage_finding(job: JobRun, path: str) -> Finding:
    """7c: the data went through ``path`` and ``df -PT`` shows a Weka mount, not the root filesystem."""
    output = job.output.strip()[-300:]
    wrote = written_mb(job.output)
    row = df_row(job.output)
    if job.state != "COMPLETED" or wrote is None or row is None:
        return Finding.failed(
            runbook.SMOKE_STORAGE.name,
            f"job {job.state} before writing and reading back {path}; output: {output}",
            f"read the job output: {path} must exist on the Slurm nodes and be writable by the tenant's group",
        )
    fstype, mount = row
    if fstype in WEKA_FS_TYPES and mount != "/":
        return Finding.passed(
            runbook.SMOKE_STORAGE.name,
            f"{path}: {wrote} MiB written and read back on {fstype} mounted at {mount}",
        )
    return Finding.failed(
        runbook.SMOKE_STORAGE.name,
        f"{path} is on {fstype} mounted at {mount}, not a Weka mount: {output}",
        "add the Weka /scratch volumeMount to the SUNK NodeSet template",
    )


@defn(runbook.SMOKE_STORAGE)
def storage(inp: StepInput) -> StepResult:
    conf = smoke_settings()
    path = f"{conf.scratch_root.rstrip('/')}/{word(inp.contract.slug)}"
    job = submit(inp, "storage", storage_script(path, conf.write_mb), 1, [])
    if isinstance(job, Finding):
        return _result(inp, "storage", "NOUSER", [job], [not_run(job)])
    row = df_row(job.output)
    figures = {
        "mib_written_and_read": written_mb(job.output),
        "filesystem_type": row and row[0],
        "mount": row and row[1],
    }
    ran = f"write and read back {conf.write_mb} MiB under {path}, then df -PT {path}"
    proof = evidence(runbook.SMOKE_STORAGE.name, ran, job, figures)
    return _result(inp, "storage", job.state, [storage_finding(job, path)], [proof])


ACTIVITIES = [single_node, nccl, storage]
