"""The partition backend tenantflow uses today: the Slurm operator's ConfigMap rendered into a file slurm.conf
includes.

The Slurm layer writes one ``<slug>.conf`` key of the ConfigMap ``SLURM_PARTITIONS_CONFIGMAP`` in
``SLURM_NAMESPACE`` and waits for slurmctld's configuration files to show it (:mod:`activities.slurm.partition`),
so slurm.conf must ``Include`` a file (slurm.conf(5), https://slurm.schedmd.com/slurm.conf.html#OPT_Include),
read through :func:`activities.slurm.partition.config_files` (``scontrol show config`` and ``cat`` in the
slurmctld container). The ConfigMap may be absent before the first tenant: the first onboarding creates it.
"""

from __future__ import annotations

from tenantflow.activities.common.settings import settings
from tenantflow.activities.slurm.partition import config_files
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "slurm.partition_backend"
GRANT = "get on ConfigMaps and create on pods/exec in the Slurm namespace"


def partition_backend(estate: Estate) -> Result:
    """slurm.conf includes a file (where the operator renders the partitions ConfigMap)."""
    cfg = settings()
    files = config_files(estate.slurm)
    where = f"ConfigMap {cfg.slurm_namespace}/{cfg.slurm_partitions_configmap}"
    configmap = estate.kube.get("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace)
    present = f"{where} {'present' if configmap else 'absent (the first onboarding creates it)'}"
    if len(files) < 2:
        return failed(
            NAME,
            f"{files[0]} includes no file; {present}",
            f"have the Slurm operator render {where} into a file and Include it from slurm.conf "
            "(tenantflow's partition backend today)",
        )
    return ok(NAME, f"configmap backend: {files[0]} includes {', '.join(files[1:])}; {present}")
