"""The ``slinky`` partition backend: a line of the ``extraConf`` of Slinky's ``Controller``.

SchedMD's Slinky slurm-operator (https://github.com/SlinkyProject/slurm-operator) renders slurm.conf from the
``Controller`` resource (``slinky.slurm.net/v1beta1``, ``api/v1beta1/controller_types.go``): its
``buildSlurmConf`` (``internal/builder/controllerbuilder/controller_config.go``) writes the operator's own
settings, one ``NodeSet=``/``PartitionName=<nodeset> Nodes=<nodeset>`` pair per NodeSet whose
``spec.partition.enabled`` is set, then ``spec.extraConf`` verbatim ("ExtraConf is appended onto the end of the
slurm.conf file"). A NodeSet's partition always holds exactly that NodeSet's pods, so it cannot name the nodes a
tenant's Reservation holds; ``extraConf`` is the documented field that takes a whole ``PartitionName=`` line.
This backend keeps one line per tenant there, found by its ``PartitionName=``; it reads, changes and writes the
field with the object's ``resourceVersion`` in the merge patch, so a concurrent writer's change makes the API
server answer 409 Conflict instead of being lost (https://kubernetes.io/docs/reference/using-api/api-concepts/
#patch-and-apply; the write is retried on a fresh read).

Slinky applies a slurm.conf change itself: with ``spec.inplaceReconfigure`` its ``reconfigure`` sidecar hashes
``/etc/slurm`` every 5 s and runs ``scontrol reconfigure`` when it changes
(``internal/builder/controllerbuilder/scripts/reconfigure.sh``); without it the pod template carries the
configuration's hash, so the operator recreates the slurmctld pod, which reads the new file at start
(``controller_app.go``, ``getHashes``). So tenantflow issues no ``scontrol reconfigure`` of its own here; it waits
for slurmctld's files and then for ``scontrol show partition``. The Controller's status has conditions only, not
the configuration it rendered, so the files are what shows the change.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.settings import settings
from tenantflow.models.tenant import TenantContract

NAME = "slinky"
KIND = "Controller"
ATTEMPTS = 5
"""Read-change-write rounds before a run of 409 Conflicts (other writers of ``extraConf``) fails the step."""


def partition_name(line: str) -> str | None:
    """The ``PartitionName=`` of a slurm.conf line (the keyword is case-insensitive, the name is not)."""
    first = line.split()[0] if line.split() else ""
    key, _, value = first.partition("=")
    return value if key.lower() == "partitionname" and value else None


def with_line(extra_conf: str, slug: str, line: str | None) -> str:
    """``extra_conf`` with partition ``slug``'s line replaced by ``line`` (appended when absent, dropped for
    None); every other line kept as it was."""
    kept: list[str] = []
    placed = False
    for current in extra_conf.splitlines():
        if partition_name(current) != slug:
            kept.append(current)
        elif line is not None and not placed:
            kept.append(line)
            placed = True
    if line is not None and not placed:
        kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")


class Slinky:
    """The tenant's line in ``spec.extraConf`` of Controller ``SLURM_SLINKY_CONTROLLER`` in ``SLURM_NAMESPACE``."""

    name = NAME

    def where(self, c: TenantContract) -> str:
        cfg = settings()
        return f"Controller {cfg.slurm_namespace}/{cfg.slurm_slinky_controller} (slinky.slurm.net) spec.extraConf"

    def _controller(self, c: TenantContract) -> dict[str, Any]:
        cfg = settings()
        found = KubeObjects(c.cluster).get(KIND, cfg.slurm_slinky_controller, cfg.slurm_namespace)
        if found is None:
            raise fail(
                "NotFound",
                f"Slinky Controller {cfg.slurm_namespace}/{cfg.slurm_slinky_controller} does not exist: set "
                "SLURM_SLINKY_CONTROLLER (and SLURM_NAMESPACE) to the Controller that renders slurmctld's "
                "slurm.conf, or SLURM_PARTITION_BACKEND to the platform's backend",
            )
        return found

    def lines(self, c: TenantContract) -> dict[str, str]:
        extra = str((self._controller(c).get("spec") or {}).get("extraConf") or "")
        return {name: line for line in extra.splitlines() if (name := partition_name(line)) is not None}

    def write(self, c: TenantContract, line: str | None) -> None:
        cfg = settings()
        objs = KubeObjects(c.cluster)
        for attempt in range(ATTEMPTS):
            controller = self._controller(c)
            extra = str((controller.get("spec") or {}).get("extraConf") or "")
            wanted = with_line(extra, c.slug, line)
            if wanted == extra:
                return
            body = {"metadata": {"resourceVersion": controller["metadata"]["resourceVersion"]}}
            try:
                objs.patch(
                    KIND, cfg.slurm_slinky_controller, cfg.slurm_namespace, body | {"spec": {"extraConf": wanted}}
                )
                return
            except ApplicationError as err:
                if err.type != "Conflict" or attempt == ATTEMPTS - 1:
                    raise

    def reconfigures(self, c: TenantContract) -> bool:
        return True
