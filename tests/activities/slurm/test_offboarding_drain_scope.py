"""An offboarding's drain never reaches another tenant's jobs: it lists and cancels only the jobs of accounts that
carry the tenant's ownership marker (``Organization=<slug>``), as the Slurm undo deletes only those.

A contract names its team account freely (``slurm.team_account``: another tenant's default ``ml-team-<short>``,
or its organization account): without the marker check, offboarding such a contract listed the other tenant's jobs
and ran ``scancel -A`` as root on its account. Against the real slurmctld and slurmdbd behind the kube emulator."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from temporalio.testing import ActivityEnvironment

from tenantflow.activities.slurm import jobs as slurm_jobs
from tenantflow.models.offboarding import JobsToCancel
from tenantflow.models.results import Outcome
from tests.activities.slurm.conftest import SlurmLab, make_contract, step_input


@contextmanager
def held_job(lab: SlurmLab, account: str, organization: str) -> Iterator[str]:
    """A held (pending) job of root charged to ``account``, made with marker ``Organization=<organization>``."""
    lab.sh("sacctmgr", "-i", "add", "account", account, f"Organization={organization}", "Description=drain")
    lab.sh("sacctmgr", "-i", "add", "user", "root", f"account={account}")
    job = lab.sh(
        "sbatch", "--parsable", "--hold", f"--account={account}", "--partition=lab", "--chdir=/tmp",
        "--output=/dev/null", "--time=00:05:00", "--wrap", "true",
    ).strip().split(";")[0]  # fmt: skip
    try:
        yield job
    finally:
        lab.slurm.run("scancel", job, check=False)
        lab.slurm.run("sacctmgr", "-i", "delete", "user", "root", f"account={account}", check=False)
        lab.slurm.run("sacctmgr", "-i", "delete", "account", account, check=False)


def test_a_contract_naming_another_tenants_account_neither_lists_nor_cancels_its_jobs(lab: SlurmLab) -> None:
    others = f"ml-team-{secrets.token_hex(3)}"
    contract = make_contract(lab.target, team_account=others)
    with (
        held_job(lab, others, f"tenant-o{secrets.token_hex(3)}") as theirs,
        held_job(lab, contract.slug, contract.slug) as ours,
    ):
        planned = ActivityEnvironment().run(slurm_jobs.jobs, step_input(contract))
        drained = ActivityEnvironment().run(slurm_jobs.cancel_jobs, JobsToCancel(contract=contract, planned=[ours]))

        assert [(s.name, s.detail["account"]) for s in planned] == [(ours, contract.slug)], planned
        assert [(r.name, r.outcome) for r in drained.results] == [(ours, Outcome.deleted)] and not drained.findings
        assert lab.sh("squeue", "-h", "-j", theirs, "-o", "%T").strip() == "PENDING", "another tenant's job went"


def test_the_drain_holds_the_tenants_submissions_so_no_job_starts_before_the_accounts_go(lab: SlurmLab) -> None:
    """Between the drain and the deletion of the accounts a user could submit again, and ``sacctmgr`` would then
    refuse the deletion ("Job(s) active"), stopping the teardown half-way: the drain holds the tenant's accounts at
    ``GrpSubmitJobs=0`` first, which slurmctld enforces (``AccountingStorageEnforce=limits``)."""
    contract = make_contract(lab.target)
    with held_job(lab, contract.slug, contract.slug) as ours:
        ActivityEnvironment().run(slurm_jobs.cancel_jobs, JobsToCancel(contract=contract, planned=[ours]))
        again = lab.slurm.run(
            "sbatch", "--parsable", "--hold", f"--account={contract.slug}", "--partition=lab", "--chdir=/tmp",
            "--output=/dev/null", "--time=00:05:00", "--wrap", "true", check=False,
        )  # fmt: skip
        assert again.returncode != 0 and "Job violates accounting/QOS policy" in again.stderr, again
        assert lab.sh("squeue", "-h", "-A", contract.slug).strip() == ""
