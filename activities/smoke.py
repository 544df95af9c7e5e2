"""Smoke tests of runbook step 7: real sbatch jobs in the tenant partition, output checked.

Each test submits a job through the slurmctld pod as the tenant's first user
(``sbatch --uid``), on nodes of the partition that are up, waits for it with
backoff and heartbeats (``scontrol show job``), reads its output file and
checks it: exactly one GPU visible (7a), all-reduce busbw at 4 GB against the
SKU tier (7b), ``/scratch/<slug>`` on a Weka mount, not the root filesystem
(7c). A check that fails is returned as an error finding, never as success.
"""

from __future__ import annotations

import re
import time

from temporalio import activity

from activities.errors import fail
from activities.slurm_cli import SlurmCtl, parse_keyvalues, parse_node_states, parse_sbatch, word
from models.onboarding import StepInput, StepResult
from models.results import Finding
from models.sku import lookup_sku
from models.tenant import TenantContract

JOB_TIMEOUT_S = 600.0
FINISHED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE"}
BUSBW_TOO_LOW = 0.8
"""A busbw below this fraction of the tier expectation is a finding (runbook: 'dramatically below')."""
FOUR_GB = 4 * 1024**3
WEKA_FS_TYPES = ("wekafs",)


def _finding(check: str, ok: bool, message: str, fix: str = "") -> Finding:
    return Finding(check=f"smoke.{check}", ok=ok, message=message, fix=fix)


def up_nodes(ctl: SlurmCtl, c: TenantContract, count: int) -> list[str]:
    states = parse_node_states(ctl.run(["sinfo", "-h", "-N", "-p", word(c.slug), "-o", "%N|%t"]).stdout)
    usable = sorted({s.node for s in states if s.usable})
    if len(usable) < count:
        raise fail("SmokeFailed", f"partition {c.slug} has {len(usable)} responding node(s), the test needs "
                                  f"{count}: {', '.join(f'{s.node}={s.state}' for s in states)}")
    return usable[:count]


def run_job(ctl: SlurmCtl, c: TenantContract, name: str, script: str, nodes: list[str],
            extra: list[str]) -> tuple[str, str]:
    """Submit, wait, and return (final state, output text)."""
    user = c.usernames[0]
    argv = ["sbatch", "--parsable", f"--uid={word(user)}", f"--partition={word(c.slug)}",
            f"--account={word(c.user_account)}", f"--job-name=smoke-{name}", f"--nodelist={','.join(nodes)}",
            f"--output=smoke-{name}-%j.out", "--time=00:05:00", *extra, "--wrap", script]
    job = parse_sbatch(ctl.run(argv).stdout)
    deadline, delay = time.monotonic() + JOB_TIMEOUT_S, 0.5
    while True:
        info = parse_keyvalues(ctl.run(["scontrol", "show", "job", str(job)]).stdout)
        state = info.get("JobState", "")
        if state in FINISHED:
            break
        if time.monotonic() > deadline:
            ctl.run(["scancel", str(job)], check=False)
            return "TIMEOUT", f"job {job} still {state} ({info.get('Reason', '')}) after {JOB_TIMEOUT_S:.0f} s"
        if activity.in_activity():
            activity.heartbeat(f"job {job} {state}")
        time.sleep(delay)
        delay = min(delay * 1.5, 10.0)
    out = ctl.run(["cat", info.get("StdOut", "")], check=False)
    return state, out.stdout if out.exit_code == 0 else f"(output unreadable: {out.stderr.strip()})"


def _submit(inp: StepInput, name: str, script: str, nodes: int, extra: list[str]) -> tuple[str, str]:
    c = inp.contract
    ctl = SlurmCtl.connect(c.cluster)
    return run_job(ctl, c, name, script, up_nodes(ctl, c, nodes), extra)


SINGLE_NODE = """set -eu
hostname
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "GPUS=$(nvidia-smi -L | wc -l)"
"""


@activity.defn(name="smoke.single_node")
def single_node(inp: StepInput) -> StepResult:
    state, out = _submit(inp, "gpu", SINGLE_NODE, 1, ["--gres=gpu:1"])
    gpus = re.search(r"^GPUS=(\d+)$", out, re.M)
    ok = state == "COMPLETED" and gpus is not None and gpus.group(1) == "1"
    message = (f"job saw exactly one GPU ({out.splitlines()[0] if out else ''})" if ok else
               f"job {state}; GPUs visible: {gpus.group(1) if gpus else 'unknown'}; output: {out.strip()[-300:]}")
    facts = inp.facts.model_copy(update={"smoke": {**inp.facts.smoke, "single_node": state}})
    return StepResult(facts=facts, findings=[_finding(
        "single_node", ok, message, "" if ok else "set ConstrainDevices=yes in cgroup.conf (SUNK chart)")])


def parse_busbw(output: str, size: int = FOUR_GB) -> float | None:
    """Out-of-place busbw (GB/s) of the all_reduce_perf row for ``size`` bytes."""
    for line in output.splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0] == str(size):
            return float(cols[7])
    return None


@activity.defn(name="smoke.nccl")
def nccl(inp: StepInput) -> StepResult:
    c = inp.contract
    per_node = c.capacity.gpus_per_node
    script = "set -eu\nsrun all_reduce_perf -b 8 -e 4G -f 2 -g 1\n"
    state, out = _submit(inp, "nccl", script, 2,
                         ["--nodes=2", f"--ntasks-per-node={per_node}", f"--gres=gpu:{per_node}"])
    tier = lookup_sku(c.capacity.sku).tier_busbw_gbps
    busbw = parse_busbw(out)
    ok = state == "COMPLETED" and busbw is not None and busbw >= BUSBW_TOO_LOW * tier
    message = (f"busbw {busbw} GB/s at 4 GB (tier {tier} GB/s)" if busbw is not None
               else f"job {state}; no 4 GB row in output: {out.strip()[-300:]}")
    facts = inp.facts.model_copy(update={"smoke": {**inp.facts.smoke, "nccl_busbw_gbps": str(busbw)}})
    return StepResult(facts=facts, findings=[_finding(
        "nccl", ok, message, "" if ok else "run network validation (ACS, IB plane, MTU) before handover")])


@activity.defn(name="smoke.storage")
def storage(inp: StepInput) -> StepResult:
    c = inp.contract
    path = f"/scratch/{word(c.slug)}"
    script = (f"set -eu\ncd {path}\ndd if=/dev/urandom of=smoke.$SLURM_JOB_ID bs=1M count=64 status=none\n"
              f"dd if=smoke.$SLURM_JOB_ID of=/dev/null bs=1M status=none\nrm smoke.$SLURM_JOB_ID\n"
              f"echo FSTYPE=$(stat -f -c %T {path})\ndf -P {path}\n")
    state, out = _submit(inp, "storage", script, 1, [])
    fstype = re.search(r"^FSTYPE=(\S+)$", out, re.M)
    mount = out.strip().splitlines()[-1].split()[-1] if out.strip() else ""
    ok = state == "COMPLETED" and fstype is not None and fstype.group(1) in WEKA_FS_TYPES and mount != "/"
    message = (f"{path} written and read on {fstype.group(1) if fstype else '?'} mounted at {mount}" if ok else
               f"job {state}; {path} is not on a Weka mount: {out.strip()[-300:]}")
    facts = inp.facts.model_copy(update={"smoke": {**inp.facts.smoke, "storage": state}})
    return StepResult(facts=facts, findings=[_finding(
        "storage", ok, message, "" if ok else "add the Weka /scratch volumeMount to the SUNK NodeSet template")])


ACTIVITIES = [single_node, nccl, storage]
