"""Whether slurmctld enforces the limits onboarding stores: the preflight's check of two slurm.conf settings.

The Slurm layer writes ``GrpTRES=gres/gpu=N`` on the tenant account and QoS and ``MaxJobs`` on each user.
slurmdbd stores those for any configuration, but slurmctld enforces them only with ``AccountingStorageEnforce``
including ``limits`` ("This will enforce limits set on associations and qos"), and counts GPUs against a
``gres/gpu`` TRES limit only when ``AccountingStorageTRES`` tracks ``gres/gpu`` (slurm.conf(5),
https://slurm.schedmd.com/slurm.conf.html#OPT_AccountingStorageEnforce and
#OPT_AccountingStorageTRES). :func:`enforcement_problems` reads both from ``scontrol show config``
(https://slurm.schedmd.com/scontrol.html), which prints the values slurmctld runs with (``safe`` implies
``limits`` there, so ``limits`` is listed too); each problem names the setting and the fix, and the preflight
refuses the onboarding before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass

ENFORCE = "AccountingStorageEnforce"
TRES = "AccountingStorageTRES"


@dataclass(frozen=True)
class Problem:
    """A setting slurmctld runs with that leaves the tenant's limits unenforced, and how to fix it."""

    message: str
    fix: str


def _values(config: dict[str, str], key: str) -> list[str]:
    return [v.strip().lower() for v in config.get(key, "").split(",") if v.strip()]


def enforcement_problems(config: dict[str, str]) -> list[Problem]:
    """What in ``config`` (``scontrol show config`` as parsed) keeps GrpTRES and MaxJobs from being enforced."""
    problems = []
    enforce = _values(config, ENFORCE)
    if "limits" not in enforce:
        problems.append(
            Problem(
                f"{ENFORCE}={config.get(ENFORCE) or '(unset)'} lacks limits: slurmctld stores the tenant's "
                "GrpTRES and MaxJobs but never enforces them",
                f"set {ENFORCE}=associations,limits,qos in slurm.conf, then restart slurmctld",
            )
        )
    if "gres/gpu" not in _values(config, TRES):
        problems.append(
            Problem(
                f"{TRES}={config.get(TRES) or '(unset)'} does not track gres/gpu: a GrpTRES=gres/gpu=N limit "
                "counts no GPUs",
                f"add gres/gpu to {TRES} in slurm.conf (e.g. {TRES}=gres/gpu), then restart slurmctld",
            )
        )
    return problems
