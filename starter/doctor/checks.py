"""Every doctor check, in the order the report lists them: the onboarding runbook's systems, then enrollment."""

from __future__ import annotations

from tenantflow.starter.doctor import (
    authentik,
    crds,
    gpus,
    helper_security,
    konduktor,
    kueue,
    outpost,
    partitions,
    pod_security,
    slurm,
    weka,
)
from tenantflow.starter.doctor.report import Check

CHECKS: tuple[Check, ...] = (
    Check(authentik.NAME, authentik.authentik_groups, authentik.GRANT),
    Check(outpost.NAME, outpost.outpost_port, outpost.GRANT),
    Check(slurm.NAME, slurm.slurm_enforcement, slurm.GRANT),
    Check(partitions.NAME, partitions.partition_backend, partitions.GRANT),
    Check(pod_security.NAME, pod_security.login_pod_security, pod_security.GRANT),
    Check(crds.NAME, crds.operator_crds, crds.GRANT),
    Check(weka.DRIVER_NAME, weka.csi_wekafs_driver, weka.DRIVER_GRANT),
    Check(weka.API_NAME, weka.weka_api, weka.API_GRANT),
    Check(helper_security.NAME, helper_security.helper_pod_security, helper_security.GRANT),
    Check(gpus.NAME, gpus.gpus_per_node, gpus.GRANT),
    Check(kueue.NAME, kueue.kueue_version, kueue.GRANT),
    Check(konduktor.NAME, konduktor.konduktor_version, konduktor.GRANT),
)
