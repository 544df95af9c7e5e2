"""Whether the partition backend tenantflow is set to use (``SLURM_PARTITION_BACKEND``) is there.

The Slurm layer writes the tenant's partition line through that backend
(:mod:`activities.slurm.partition_backends`) and waits for slurmctld's configuration files to show it
(:mod:`activities.slurm.partition`), read through :func:`activities.slurm.partition.config_files` (``scontrol show
config`` and ``cat`` in the slurmctld container):

- ``include``: one ``<slug>.conf`` key of the ConfigMap ``SLURM_PARTITIONS_CONFIGMAP`` in ``SLURM_NAMESPACE``, so
  slurm.conf must ``Include`` a file (slurm.conf(5), https://slurm.schedmd.com/slurm.conf.html). The ConfigMap may
  be absent before the first tenant: the first onboarding creates it.
- ``slinky``: the ``extraConf`` of Slinky's ``Controller`` ``SLURM_SLINKY_CONTROLLER`` (``slinky.slurm.net``,
  https://github.com/SlinkyProject/slurm-operator ``api/v1beta1/controller_types.go``), which must exist.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.settings import settings
from tenantflow.activities.slurm.partition import config_files
from tenantflow.activities.slurm.partition_backends import chosen, include, slinky
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "slurm.partition_backend"
GRANT = "get on ConfigMaps (include) or Slinky Controllers (slinky) and create on pods/exec in the Slurm namespace"


def partition_backend(estate: Estate) -> Result:
    """The chosen backend's object is there (slinky) or slurm.conf includes a file (include)."""
    try:
        backend = chosen()
    except ApplicationError as err:
        return failed(NAME, err.message, "set SLURM_PARTITION_BACKEND to include or slinky")
    cfg = settings()
    if backend.name == slinky.NAME:
        found = estate.kube.get(slinky.KIND, cfg.slurm_slinky_controller, cfg.slurm_namespace)
        where = f"Controller {cfg.slurm_namespace}/{cfg.slurm_slinky_controller} (slinky.slurm.net)"
        if found is None:
            return failed(
                NAME,
                f"slinky backend: {where} does not exist",
                "set SLURM_SLINKY_CONTROLLER to the Controller that renders slurmctld's slurm.conf, or "
                "SLURM_PARTITION_BACKEND to the platform's backend",
            )
        inplace = bool((found.get("spec") or {}).get("inplaceReconfigure"))
        applies = "its reconfigure sidecar" if inplace else "a new slurmctld pod"
        return ok(NAME, f"slinky backend: {where} present; Slinky applies a change with {applies}")
    files = config_files(estate.slurm)
    where = f"ConfigMap {cfg.slurm_namespace}/{cfg.slurm_partitions_configmap}"
    configmap = estate.kube.get("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace)
    present = f"{where} {'present' if configmap else 'absent (the first onboarding creates it)'}"
    if len(files) < 2:
        return failed(
            NAME,
            f"{files[0]} includes no file; {present}",
            f"have the platform render {where} into a file and Include it from slurm.conf "
            f"(SLURM_PARTITION_BACKEND={include.NAME}), or choose the platform's backend",
        )
    return ok(NAME, f"{include.NAME} backend: {files[0]} includes {', '.join(files[1:])}; {present}")
