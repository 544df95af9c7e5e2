"""The ``include`` partition backend: a key of a ConfigMap rendered into a file a self-managed slurm.conf includes.

For a cluster whose slurm.conf the platform team writes itself: one ``<slug>.conf`` key per tenant in the
ConfigMap ``SLURM_PARTITIONS_CONFIGMAP`` of ``SLURM_NAMESPACE``, which the platform's own tooling mounts into the
slurmctld pod and slurm.conf pulls in with ``Include`` (slurm.conf(5): "If a line begins with the word Include
followed by whitespace and then a file name, that file will be included inline";
https://slurm.schedmd.com/slurm.conf.html; it documents one file name per ``Include``, with the ``%c`` modifier,
and no globs, so the keys must be rendered into one file, or each included by name). No SUNK or Slinky component
reads this ConfigMap. A mounted ConfigMap reaches the pod after the kubelet's sync period plus its cache TTL,
often 60-90 s (https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically),
and nothing makes slurmctld re-read it: tenantflow runs the one ``scontrol reconfigure``. ConfigMaps are read
and merge-patched through the Kubernetes API (https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/config-map-v1/).
"""

from __future__ import annotations

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.settings import settings
from tenantflow.models.tenant import TenantContract

NAME = "include"


class Include:
    """The tenant's line as key ``<slug>.conf`` of the partitions ConfigMap."""

    name = NAME

    def where(self, c: TenantContract) -> str:
        cfg = settings()
        return f"ConfigMap {cfg.slurm_namespace}/{cfg.slurm_partitions_configmap} key {c.slug}.conf"

    def lines(self, c: TenantContract) -> dict[str, str]:
        cfg = settings()
        found = KubeObjects(c.cluster).get("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace)
        data = dict((found or {}).get("data") or {})
        return {key.removesuffix(".conf"): line for key, line in data.items() if key.endswith(".conf")}

    def write(self, c: TenantContract, line: str | None) -> None:
        cfg = settings()
        key = f"{c.slug}.conf"
        objs = KubeObjects(c.cluster)
        if objs.get("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace) is None:
            if line is None:
                return
            objs.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "data": {key: line},
                    "metadata": {"name": cfg.slurm_partitions_configmap, "namespace": cfg.slurm_namespace},
                }
            )
            return
        objs.patch("ConfigMap", cfg.slurm_partitions_configmap, cfg.slurm_namespace, {"data": {key: line}})

    def reconfigures(self, c: TenantContract) -> bool:
        return False
