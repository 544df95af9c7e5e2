"""The jobs slurmctld holds, listed with squeue: by user, by node or by account.

One listing (``squeue -h -o %i|%u|%T|%N|%a``: id, user, state, nodes, account; no header) serves every step that
must know which jobs hold something before it takes it away: a change that removes users or releases nodes, and an
offboarding that cancels the tenant's jobs before its accounts go. squeue's default state filter shows the jobs
that are not finished (pending, running, suspended, completing...), which is what holds a user, node or account.
Source: squeue(1), https://slurm.schedmd.com/squeue.html (``-h``, ``-o``, ``-w``, ``-A``, ``%i %u %T %N %a``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tenantflow.activities.common.slurm_cli import SlurmCtl, words
from tenantflow.models.hostlist import expand_hostlist

JOB_FORMAT = "%i|%u|%T|%N|%a"


@dataclass(frozen=True)
class Job:
    """One job squeue lists: its id, user, state (``RUNNING``, ``PENDING``...), nodes (a hostlist) and account."""

    id: str
    user: str
    state: str
    nodes: str
    account: str

    def __str__(self) -> str:
        return f"{self.id} ({self.state})"


def queued(ctl: SlurmCtl, *, nodes: list[str] | None = None, accounts: list[str] | None = None) -> list[Job]:
    """Every unfinished job, or those on ``nodes`` (``-w``) or charged to ``accounts`` (``-A``)."""
    where = ["-w", words(nodes)] if nodes else ["-A", words(accounts)] if accounts else []
    out = ctl.run(["squeue", "-h", *where, "-o", JOB_FORMAT]).stdout
    listed = []
    for line in out.split("\n"):
        job, user, state, on, account = [*line.strip().split("|"), "", "", "", ""][:5]
        if job:
            listed.append(Job(job, user, state, on, account))
    return listed


def jobs(ctl: SlurmCtl, *, users: list[str] | None = None, nodes: list[str] | None = None) -> dict[str, list[str]]:
    """Running and pending jobs by user (``users``) or by node (``nodes``): key -> ``<id> (<state>)``. Users are
    matched in the listing rather than with ``squeue -u``, which fails on a name the host cannot resolve."""
    if not users and not nodes:
        return {}
    found: dict[str, list[str]] = {}
    wanted = set(users or nodes or [])
    for job in queued(ctl, nodes=None if users else nodes):
        keys = [job.user] if users else (expand_hostlist(job.nodes) if job.nodes else [])
        for key in (k for k in keys if k in wanted):
            found.setdefault(key, []).append(str(job))
    return found
