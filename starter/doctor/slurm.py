"""Slurm: the version slurmctld runs and whether it enforces the limits onboarding stores.

``scontrol show config`` in the slurmctld pod (scontrol(1), https://slurm.schedmd.com/scontrol.html) gives
``SLURM_VERSION``, ``AccountingStorageEnforce`` and ``AccountingStorageTRES``; the judgement is the Slurm
preflight's own (:func:`activities.slurm.enforcement.enforcement_problems`, slurm.conf(5)).
"""

from __future__ import annotations

from tenantflow.activities.slurm.enforcement import ENFORCE, TRES, enforcement_problems
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "slurm.enforcement"
GRANT = "get on Deployments/StatefulSets, list on Pods and create on pods/exec in the Slurm namespace"


def slurm_enforcement(estate: Estate) -> Result:
    """Slurm's version, ``AccountingStorageEnforce`` containing ``limits`` and ``AccountingStorageTRES``
    containing ``gres/gpu``."""
    config = estate.slurm_config
    found = (
        f"Slurm {config.get('SLURM_VERSION', '(version unknown)')}; {ENFORCE}={config.get(ENFORCE) or '(unset)'}; "
        f"{TRES}={config.get(TRES) or '(unset)'}"
    )
    problems = enforcement_problems(config)
    if problems:
        return failed(NAME, f"{found}: {'; '.join(p.message for p in problems)}", "; ".join(p.fix for p in problems))
    return ok(NAME, found)
