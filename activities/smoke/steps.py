"""Smoke tests of runbook step 7: real sbatch jobs in the tenant partition, output checked.

Each test submits a job through the slurmctld pod as the tenant's first user, as
that user would from the login pod: ``sbatch --uid --gid --chdir`` with the uid,
primary gid and home the Slurm nodes resolve (``getent passwd`` in the slurmctld
pod; a user they cannot resolve is an error finding). The job runs on nodes of
the partition that are up, is waited for with backoff and heartbeats
(``scontrol show job -d``), and its ``smoke-<test>-<id>.out`` in the home is read
and checked:

* 7a: the GPUs the job sees (``nvidia-smi -L``) must be exactly the GPUs Slurm
  allocated to it (``JOB_GRES`` of ``scontrol show job -d``), and a 1-GPU step
  inside it (``srun --gres=gpu:1``) must see exactly 1. The runbook expects 1 for
  ``--gres=gpu:1``; on an ``OverSubscribe=EXCLUSIVE`` partition Slurm allocates
  every GPU of the node to the job, so only the 1-GPU step shows whether the
  device cgroup constrains jobs (``ConstrainDevices=yes``), whatever OverSubscribe.
* 7b: all-reduce busbw at 4 GB against the SKU tier, launched ``srun --mpi=pmix``
  as the runbook does.
* 7c: write and read back ``write_mb`` MiB under ``<scratch_root>/<slug>`` and
  ``df -PT`` it: it must be a Weka mount (``wekafs``), not the root filesystem.
  ``write_mb`` and ``scratch_root`` come from :class:`SmokeSettings` (runbook:
  10 GiB under ``/scratch``; the lab sets a small size and its mount root).

A check that fails is returned as an error finding, never as success.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.polling import Backoff, heartbeat, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.slurm_cli import (
    SlurmCtl,
    command_error,
    parse_keyvalues,
    parse_node_states,
    parse_sbatch,
    word,
)
from tenantflow.activities.slurm.users import Account, resolve_user
from tenantflow.models import runbook
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.results import Finding
from tenantflow.models.sku import lookup_sku
from tenantflow.models.tenant import TenantContract

JOB_TIMEOUT_S = 600.0
FINISHED = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
}
BUSBW_TOO_LOW = 0.8
"""A busbw below this fraction of the tier expectation is a finding (runbook: 'dramatically below')."""
FOUR_GB = 4 * 1024**3
WEKA_FS_TYPES = ("wekafs",)
ASSOCIATION_LAG = re.compile(r"Invalid account or account/partition combination", re.IGNORECASE)
"""sbatch's answer while slurmctld has not yet loaded an association or partition made moments ago."""


class SmokeSettings(BaseSettings):
    """Where the tenant scratch is mounted on the Slurm nodes and how much 7c writes."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    scratch_root: str = Field("/scratch", alias="TENANTFLOW_SMOKE_SCRATCH_ROOT")
    write_mb: int = Field(10240, alias="TENANTFLOW_SMOKE_WRITE_MB", ge=1)


@lru_cache(maxsize=1)
def smoke_settings() -> SmokeSettings:
    return SmokeSettings()


@dataclass(frozen=True)
class JobRun:
    """A finished (or abandoned) smoke job: final state, output text, ``scontrol show job -d`` fields."""

    state: str
    output: str
    info: dict[str, str]
    wrote_output: bool = True

    @property
    def launch_failed(self) -> bool:
        """Ended without ever creating its output file: slurmd/slurmstepd could not start it (a launch failure,
        which slurmctld reports as FAILED or NODE_FAIL with the launch error as the exit code), not a result."""
        return self.state in ("FAILED", "NODE_FAIL", "BOOT_FAIL") and not self.wrote_output


def up_nodes(ctl: SlurmCtl, c: TenantContract, count: int) -> list[str]:
    states = parse_node_states(ctl.run(["sinfo", "-h", "-N", "-p", word(c.slug), "-o", "%N|%t"]).stdout)
    usable = sorted({s.node for s in states if s.usable})
    if len(usable) < count:
        raise fail(
            "SmokeFailed",
            f"partition {c.slug} has {len(usable)} responding node(s), the test needs "
            f"{count}: {', '.join(f'{s.node}={s.state}' for s in states)}",
        )
    return usable[:count]


def run_job(
    ctl: SlurmCtl, c: TenantContract, account: Account, name: str, script: str, nodes: list[str], extra: list[str]
) -> JobRun:
    """Submit as ``account`` from its home, wait, and return the finished job; a job whose launch failed (see
    :attr:`JobRun.launch_failed`) is submitted once more, as an operator re-runs a smoke test after a node hiccup,
    and a second launch failure is returned with the first one's exit code and reason in its output."""
    first = _run_job_once(ctl, c, account, name, script, nodes, extra)
    if not first.launch_failed:
        return first
    heartbeat({"smoke": f"{name}: job launch failed, submitting once more"})
    again = _run_job_once(ctl, c, account, name, script, nodes, extra)
    if not again.launch_failed:
        return again
    code, reason = first.info.get("ExitCode", "?"), first.info.get("Reason", "?")
    why = f"launch failed twice (first: ExitCode={code} Reason={reason})"
    return JobRun(again.state, f"{again.output} {why}", again.info, wrote_output=False)


def _run_job_once(
    ctl: SlurmCtl, c: TenantContract, account: Account, name: str, script: str, nodes: list[str], extra: list[str]
) -> JobRun:
    argv = [
        "sbatch",
        "--parsable",
        f"--uid={account.uid}",
        f"--gid={account.gid}",
        f"--chdir={account.home}",
        f"--partition={word(c.slug)}",
        f"--account={word(c.user_account)}",
        f"--job-name=smoke-{name}",
        f"--nodelist={','.join(nodes)}",
        f"--output=smoke-{name}-%j.out",
        "--time=00:05:00",
        *extra,
        "--wrap",
        script,
    ]
    submitted = ctl.run(argv, check=False)
    if submitted.exit_code != 0 and ASSOCIATION_LAG.search(submitted.stderr):
        raise ApplicationError(
            f"sbatch refused the account {c.user_account} on partition {c.slug}: "
            f"{submitted.stderr.strip()} (slurmctld may not have loaded the new association "
            "or partition yet; retried)",
            type="Unavailable",
        )
    if submitted.exit_code != 0:
        raise command_error(argv, submitted)
    job = parse_sbatch(submitted.stdout)
    ran = poll_until(
        lambda: parse_keyvalues(ctl.run(["scontrol", "show", "job", "-d", str(job)]).stdout),
        lambda info: info.get("JobState", "") in FINISHED,
        every=Backoff(0.5, 1.5, 10.0),
        budget_s=JOB_TIMEOUT_S,
        detail=lambda info: f"job {job} {info.get('JobState', '')}",
    )
    info, state = ran.value, ran.value.get("JobState", "")
    if not ran.done:
        ctl.run(["scancel", str(job)], check=False)
        return JobRun(
            "TIMEOUT", f"job {job} still {state} ({info.get('Reason', '')}) after {JOB_TIMEOUT_S:.0f} s", info
        )
    out = ctl.run(["cat", info.get("StdOut", "")], check=False)
    text = out.stdout if out.exit_code == 0 else f"(output unreadable: {out.stderr.strip()})"
    return JobRun(state, text, info, wrote_output=out.exit_code == 0)


def _submit(inp: StepInput, name: str, script: str, nodes: int, extra: list[str]) -> JobRun | Finding:
    """Run the job, or the finding that the first user does not resolve on the Slurm nodes."""
    c = inp.contract
    ctl = SlurmCtl.connect(c.cluster)
    user = c.usernames[0]
    account = resolve_user(ctl, user)
    if account is None:
        return Finding.failed(
            f"smoke.{name}",
            f"getent passwd {user} finds nothing on the Slurm nodes: jobs cannot run as {user}",
            "point nslcd/nsscache of the slurmd pods at the LDAP outpost",
        )
    return run_job(ctl, c, account, name, script, up_nodes(ctl, c, nodes), extra)


def _result(inp: StepInput, key: str, value: str, finding: Finding) -> StepResult:
    facts = inp.facts.model_copy(update={"smoke": {**inp.facts.smoke, key: value}})
    return StepResult(facts=facts, findings=[finding])


SINGLE_NODE = """set -eu
hostname
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "GPUS=$(nvidia-smi -L | wc -l)"
echo "STEP_GPUS=$(srun --ntasks=1 --gres=gpu:1 nvidia-smi -L | wc -l)"
"""


def allocated_gpus(info: dict[str, str]) -> int | None:
    """GPUs Slurm allocated to the job: ``JOB_GRES=gpu:8`` or ``gpu:h100:8`` of ``scontrol show job -d``."""
    match = re.search(r"(?:^|,)gpu(?::[^:,]+)?:(\d+)", info.get("JOB_GRES", ""))
    return int(match.group(1)) if match else None


def _count(output: str, key: str) -> int | None:
    seen = re.search(rf"^{key}=(\d+)$", output, re.M)
    return int(seen.group(1)) if seen else None


def gpu_finding(job: JobRun, requested: int) -> Finding:
    """7a: the job sees exactly the GPUs Slurm allocated to it, and a 1-GPU step inside it sees 1."""
    visible, step = _count(job.output, "GPUS"), _count(job.output, "STEP_GPUS")
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
    job = _submit(inp, "single_node", SINGLE_NODE, 1, ["--gres=gpu:1"])
    if isinstance(job, Finding):
        return _result(inp, "single_node", "NOUSER", job)
    return _result(inp, "single_node", job.state, gpu_finding(job, 1))


def parse_busbw(output: str, size: int = FOUR_GB) -> float | None:
    """Out-of-place busbw (GB/s) of the all_reduce_perf row for ``size`` bytes."""
    for line in output.splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0] == str(size):
            return float(cols[7])
    return None


@defn(runbook.SMOKE_NCCL)
def nccl(inp: StepInput) -> StepResult:
    c = inp.contract
    per_node = c.capacity.gpus_per_node
    script = "set -eu\nsrun --mpi=pmix all_reduce_perf -b 8 -e 4G -f 2 -g 1\n"
    job = _submit(inp, "nccl", script, 2, ["--nodes=2", f"--ntasks-per-node={per_node}", f"--gres=gpu:{per_node}"])
    if isinstance(job, Finding):
        return _result(inp, "nccl_busbw_gbps", "None", job)
    tier = lookup_sku(c.capacity.sku).tier_busbw_gbps
    busbw = parse_busbw(job.output)
    ok = job.state == "COMPLETED" and busbw is not None and busbw >= BUSBW_TOO_LOW * tier
    message = (
        f"busbw {busbw} GB/s at 4 GB (tier {tier} GB/s)"
        if busbw is not None
        else f"job {job.state}; no 4 GB row in output: {job.output.strip()[-300:]}"
    )
    if busbw is not None and not ok:
        message = f"busbw {busbw} GB/s at 4 GB is far below the tier's {tier} GB/s: PCIe ACS left on, IB plane or MTU"
    return _result(
        inp,
        "nccl_busbw_gbps",
        str(busbw),
        Finding.verdict(
            runbook.SMOKE_NCCL.name,
            ok,
            message,
            "run the ACS disable runbook on each tenant node, then network validation (IB plane, MTU), and re-run "
            "the smoke test",
        ),
    )


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


def storage_finding(job: JobRun, path: str) -> Finding:
    """7c: the data went through ``path`` and ``df -PT`` shows a Weka mount, not the root filesystem."""
    output = job.output.strip()[-300:]
    wrote = re.search(r"^WROTE_MB=(\d+)$", job.output, re.M)
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
            f"{path}: {wrote.group(1)} MiB written and read back on {fstype} mounted at {mount}",
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
    job = _submit(inp, "storage", storage_script(path, conf.write_mb), 1, [])
    if isinstance(job, Finding):
        return _result(inp, "storage", "NOUSER", job)
    return _result(inp, "storage", job.state, storage_finding(job, path))


ACTIVITIES = [single_node, nccl, storage]
