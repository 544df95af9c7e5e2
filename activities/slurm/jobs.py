"""An offboarding drains the tenant's Slurm jobs first: its plan lists them, then they are cancelled and awaited.

``sacctmgr`` refuses to delete an account or user association while a job of it is active (sacctmgr(1), ``delete``:
"Job(s) active, cancel job(s) before remove"), so an offboarding that removed the accounts with jobs running would
stop at its undo. ``slurm.jobs`` lists the running and pending jobs charged to the tenant's accounts (the organization
account and the team account, :func:`activities.slurm.wants.want_accounts`) with squeue
(:func:`activities.common.slurm_jobs.queued`, ``squeue -h -A <accounts>``): one ``delete`` plan line of kind ``job``
each, with its user (not its state: a pending job that starts between approval and the re-read before the first
removal would reopen the approval for nothing). After approval, ``slurm.cancel_jobs`` cancels every job of those
accounts (``scancel -A <account>`` as root: every user's jobs charged to it, job arrays too) and polls squeue with
heartbeats until none is listed, within :data:`CANCEL_BUDGET_S`. Before the first ``scancel`` it holds the accounts'
submissions (:func:`hold_argv`: ``GrpSubmitJobs=0``, which slurmctld enforces with ``AccountingStorageEnforce=limits``,
checked at preflight; sacctmgr(1): "Maximum number of jobs which can be in a pending or running state at any time in
aggregate for this association and all associations which are children of this association"), so no job submitted
between the drain and the removal of the accounts makes ``sacctmgr delete`` refuse and stop the teardown half-way; the
accounts are deleted next, so the hold needs no undo (an offboarding stopped before that leaves them held, and its
result says so). A job the approved plan did not list (submitted after
the plan was read) is cancelled as well, and named in a warning finding: the tenant's accounts go either way, and a
job left running would stop the teardown half-way. Jobs still listed at the end of the budget fail the step, naming
them and the fix, before anything is removed.
Sources: squeue(1) https://slurm.schedmd.com/squeue.html, scancel(1) https://slurm.schedmd.com/scancel.html
(``-A, --account``), sacctmgr(1) https://slurm.schedmd.com/sacctmgr.html.

Only accounts that carry the tenant's ownership marker (``Organization=<slug>``, as ``sacctmgr show account``
lists it; :mod:`activities.slurm.accounting`) are drained, the accounts the Slurm undo deletes: a contract names its
team account freely (``slurm.team_account``: another tenant's ``ml-team-<short>``, even its organization account),
so an account of that name may be another tenant's, whose jobs are never listed or cancelled. With no such account
there is nothing to drain (``squeue`` without ``-A`` would list every job of the cluster).
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.polling import Backoff, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.slurm_cli import (
    ACCOUNT_FORMAT,
    SlurmCtl,
    parse_accounts,
    sacctmgr_write,
    word,
    words,
)
from tenantflow.activities.common.slurm_jobs import Job, queued
from tenantflow.activities.slurm.wants import want_accounts
from tenantflow.models import runbook
from tenantflow.models.offboarding import JOB_KIND, JobsToCancel
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Finding, Outcome, Severity
from tenantflow.models.tenant import TenantContract

LAYER = "slurm"
CANCEL_BUDGET_S = 300.0
"""How long the cancelled jobs may take to leave squeue: a cancelled job gets SIGTERM, then SIGKILL after the
cluster's ``KillWait`` (30 s by default, slurm.conf(5)), and is listed ``COMPLETING`` until its nodes report it
ended (well inside :data:`models.runbook.CANCEL_TIMEOUT`)."""
CANCEL_POLL = Backoff(1.0, 1.5, 10.0)
"""Well inside the step's heartbeat timeout: every probe heartbeats the jobs still listed."""


def tenant_accounts(ctl: SlurmCtl, c: TenantContract) -> list[str]:
    """The Slurm accounts the tenant's jobs are charged to: its organization account and its team account, those
    of them that exist with the tenant's marker ``Organization=<slug>`` (the module's docstring)."""
    names = [want.name for want in want_accounts(c)]
    records = parse_accounts(ctl.show("account", {"names": words(names)}, ACCOUNT_FORMAT))
    ours = {r.account.lower() for r in records if r.organization.lower() == c.slug}
    return [name for name in names if name in ours]


def hold_argv(accounts: list[str]) -> list[str]:
    """``sacctmgr -i modify account where name=<accounts> set GrpSubmitJobs=0``: no new job of these accounts or of
    their users' associations (children of the account's) is accepted."""
    return sacctmgr_write("modify", "account", "", "GrpSubmitJobs=0", where={"name": words(accounts)}, set_mode=True)


def plan_line(job: Job) -> PlanStep:
    return PlanStep(
        layer=LAYER,
        kind=JOB_KIND,
        name=job.id,
        action=Action.delete,
        detail={"cancel": f"job {job.id} ({job.user})", "account": job.account},
    )


@defn(runbook.SLURM_JOBS)
def jobs(inp: StepInput) -> list[PlanStep]:
    """The running and pending jobs of the tenant's accounts, as the teardown plan's ``cancel`` lines (read-only)."""
    c = inp.contract
    ctl = SlurmCtl.connect(c.cluster)
    accounts = tenant_accounts(ctl, c)
    return [plan_line(job) for job in queued(ctl, accounts=accounts)] if accounts else []


def jobs_left(left: list[Job], accounts: list[str], scancel_errors: list[str]) -> ApplicationError:
    listed = ", ".join(f"{job.id} ({job.user}, {job.state}, on {job.nodes or 'no node'})" for job in left)
    said = f"; scancel said: {'; '.join(scancel_errors)}" if scancel_errors else ""
    return ApplicationError(
        f"jobs {listed} of accounts {', '.join(accounts)} are still listed {CANCEL_BUDGET_S:.0f} s after scancel"
        f"{said}; nothing was removed, and the accounts take no new job (GrpSubmitJobs=0). Fix: see why they do "
        "not end (scontrol show job ID; a job COMPLETING on a node whose slurmd does not answer ends once the node "
        "is set down: scontrol update NodeName=NODE "
        "State=DOWN Reason=...), then offboard again (if the tenant is to stay instead: sacctmgr modify account "
        f"where name={','.join(accounts)} set GrpSubmitJobs=-1)",
        type="JobsLeft",
        non_retryable=True,
    )


def absent(job: str) -> EnsureResult:
    """A planned job that had ended by itself when the drain looked."""
    return EnsureResult(layer=LAYER, kind=JOB_KIND, name=job, outcome=Outcome.absent)


@defn(runbook.SLURM_CANCEL_JOBS)
def cancel_jobs(inp: JobsToCancel) -> StepResult:
    """Cancel every job of the tenant's accounts and wait until squeue lists none: one ``deleted`` result per job
    cancelled, ``absent`` for a planned job that had ended by itself, and a warning naming each job the plan did not
    list."""
    c = inp.contract
    ctl = SlurmCtl.connect(c.cluster)
    accounts = tenant_accounts(ctl, c)
    if not accounts:
        return StepResult(results=[absent(job) for job in inp.planned])
    ctl.run(hold_argv(accounts))
    seen: dict[str, Job] = {}
    errors: list[str] = []

    def cancel_new() -> list[Job]:
        left = queued(ctl, accounts=accounts)
        if any(job.id not in seen for job in left):
            for account in accounts:
                out = ctl.run(["scancel", f"--account={word(account)}"], check=False)
                if out.exit_code != 0 and out.stderr.strip():
                    errors.append(out.stderr.strip())
        seen.update({job.id: job for job in left if job.id not in seen})
        return left

    waited = poll_until(
        cancel_new,
        lambda left: not left,
        every=CANCEL_POLL,
        budget_s=CANCEL_BUDGET_S,
        detail=lambda left: {"waiting_for_jobs": [str(job) for job in left]},
    )
    if not waited.done:
        raise jobs_left(waited.value, accounts, errors)
    results = [EnsureResult(layer=LAYER, kind=JOB_KIND, name=job, outcome=Outcome.deleted) for job in seen]
    results += [absent(job) for job in inp.planned if job not in seen]
    findings = [
        Finding.failed(
            "slurm.jobs_after_plan",
            f"job {job.id} ({job.user}, {job.state}, account {job.account}) was not in the approved plan "
            "(submitted after it was read): it was cancelled too, as the tenant's accounts go",
            severity=Severity.warning,
        )
        for job in seen.values()
        if job.id not in inp.planned
    ]
    return StepResult(results=results, findings=findings)


ACTIVITIES = [jobs, cancel_jobs]
