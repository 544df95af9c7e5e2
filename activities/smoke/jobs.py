"""Running one smoke job: ``sbatch`` through the slurmctld pod as the tenant's first user, wait, read its output.

The job is submitted as that user would from the login pod: ``sbatch --uid --gid --chdir`` with the uid, primary
gid and home the Slurm nodes resolve (``getent passwd`` in the slurmctld pod; a user they cannot resolve is an
error finding), on named nodes of the tenant partition that are up (``sinfo -N``), waited for with backoff and
heartbeats (``scontrol show job -d``), and its ``smoke-<test>-<id>.out`` in the home is read back. What ran is
kept with the job (:class:`JobRun`: id, nodes, final state, output) so the handover can show it as evidence.
Slurm's documentation of the commands: https://slurm.schedmd.com/sbatch.html, https://slurm.schedmd.com/sinfo.html,
https://slurm.schedmd.com/scontrol.html.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.polling import Backoff, heartbeat, poll_until
from tenantflow.activities.common.slurm_cli import (
    SlurmCtl,
    command_error,
    parse_keyvalues,
    parse_node_states,
    parse_sbatch,
    word,
)
from tenantflow.activities.slurm.users import Account, resolve_user
from tenantflow.models.onboarding import StepInput
from tenantflow.models.results import Finding
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


def requeued(info: dict[str, str]) -> bool:
    """The job went back to PENDING after a start: slurmctld requeues a batch job whose launch failed on the node
    (``scontrol show job`` counts it in ``Restarts``; ``JobRequeue``/``Requeue=1`` is the default) and holds it, so
    it never finishes by itself (https://slurm.schedmd.com/scontrol.html, ``Restarts``; squeue's reason
    ``launch_failed_requeued_held``)."""
    return info.get("JobState", "") == "PENDING" and info.get("Restarts", "0") not in ("", "0")


ASSOCIATION_LAG = re.compile(r"Invalid account or account/partition combination", re.IGNORECASE)
"""sbatch's answer while slurmctld has not yet loaded an association or partition made moments ago."""


@dataclass(frozen=True)
class JobRun:
    """A finished (or abandoned) smoke job: final state, output text, ``scontrol show job -d`` fields, and the
    job id and nodes it was submitted with."""

    state: str
    output: str
    info: dict[str, str]
    job_id: int | None = None
    nodes: tuple[str, ...] = field(default=())
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
    return replace(again, output=f"{again.output} {why}")


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
        lambda info: info.get("JobState", "") in FINISHED or requeued(info),
        every=Backoff(0.5, 1.5, 10.0),
        budget_s=JOB_TIMEOUT_S,
        detail=lambda info: f"{name} job {job} {info.get('JobState', '')} Reason={info.get('Reason', '')}",
        tolerate=transient,
    )
    info, state = ran.value, ran.value.get("JobState", "")
    if requeued(info):
        ctl.run(["scancel", str(job)], check=False)
        return JobRun(
            "FAILED",
            f"job {job} could not start on {','.join(nodes)} and was requeued (Restarts={info.get('Restarts')}, "
            f"Reason={info.get('Reason', '')}); the node's slurmd log names the launch error",
            info,
            job,
            tuple(nodes),
            wrote_output=False,
        )
    if not ran.done:
        ctl.run(["scancel", str(job)], check=False)
        return JobRun(
            "TIMEOUT",
            f"job {job} still {state} ({info.get('Reason', '')}) after {JOB_TIMEOUT_S:.0f} s",
            info,
            job,
            tuple(nodes),
        )
    out = ctl.run(["cat", info.get("StdOut", "")], check=False)
    text = out.stdout if out.exit_code == 0 else f"(output unreadable: {out.stderr.strip()})"
    return JobRun(state, text, info, job, tuple(nodes), wrote_output=out.exit_code == 0)


def submit(inp: StepInput, name: str, script: str, nodes: int, extra: list[str]) -> JobRun | Finding:
    """Run the job on ``nodes`` up nodes of the partition, or the finding that the first user does not resolve on
    the Slurm nodes."""
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
