"""Where the tenant's Slurm partition line is written: one backend per platform, chosen by
``SLURM_PARTITION_BACKEND``.

Each backend keeps one ``PartitionName=<slug> ...`` line per tenant in an object the platform's operator renders
into the configuration slurmctld reads, and can write it, read it back and remove it (undo, offboarding):

- ``include`` (:mod:`.include`): a key of a ConfigMap that a self-managed slurm.conf ``Include``s once the operator
  mounts it (slurm.conf(5) documents ``Include`` of one file name, with the ``%c`` modifier and no globs:
  https://slurm.schedmd.com/slurm.conf.html, INCLUDE MODIFIERS);
- ``slinky`` (:mod:`.slinky`): a line of the ``extraConf`` of Slinky's ``Controller``
  (https://github.com/SlinkyProject/slurm-operator, ``api/v1beta1/controller_types.go``).

There is no ``sunk`` backend: CoreWeave documents the ``SunkCluster`` field ``slurmConfig`` only as "custom
key-value pairs passed through to the Slurm configuration" (a map, so one ``PartitionName`` key at most) and its
``nodes`` entries as NodePools and NodeSets, with no per-partition field
(https://docs.coreweave.com/products/sunk/reference/sunkcluster-reference); docs/runbooks.md says more.

Every backend's change reaches slurmctld's own files (``SLURM_CONF`` and its ``Include``s), which
:func:`activities.slurm.partition.confirm_partition` reads before anything else; :meth:`PartitionBackend.reconfigures`
says whether tenantflow then runs the one ``scontrol reconfigure`` or the platform's operator does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.settings import settings
from tenantflow.activities.slurm.partition_backends import include, slinky
from tenantflow.models.tenant import TenantContract

SETTING = "SLURM_PARTITION_BACKEND"


class PartitionBackend(Protocol):
    """One platform's home of the tenant partition lines."""

    name: str

    def where(self, c: TenantContract) -> str:
        """The object (and field) this backend writes, as the plan and the errors name it."""
        ...

    def lines(self, c: TenantContract) -> dict[str, str]:
        """Every partition line this backend holds, by partition name."""
        ...

    def write(self, c: TenantContract, line: str | None) -> None:
        """Set the tenant's line to ``line``, or remove it (None)."""
        ...

    def reconfigures(self, c: TenantContract) -> bool:
        """True when the platform applies a configuration change to slurmctld itself (no ``scontrol reconfigure``
        of ours)."""
        ...


def read(backend: PartitionBackend, c: TenantContract) -> str | None:
    """The tenant's line as ``backend`` holds it (None: it holds none)."""
    return backend.lines(c).get(c.slug)


def chosen(name: str | None = None) -> PartitionBackend:
    """The backend ``name`` (default: ``SLURM_PARTITION_BACKEND``); an ``Invalid`` error naming the setting and
    the choices for any other name, before anything is read or written."""
    wanted = settings().slurm_partition_backend if name is None else name
    backends: dict[str, Callable[[], PartitionBackend]] = {include.NAME: include.Include, slinky.NAME: slinky.Slinky}
    if wanted not in backends:
        raise fail(
            "Invalid",
            f"{SETTING}={wanted!r} is not a partition backend; set it to one of {', '.join(backends)} "
            "(SUNK has none: its documented SunkCluster fields define no partition; see docs/runbooks.md)",
        )
    return backends[wanted]()
