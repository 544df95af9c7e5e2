"""The QoS limits tenantflow sets, one table entry each: adding a limit is one :data:`QOS_LIMITS` entry.

An entry holds every spelling of its limit: the sacctmgr key that ``add``/``modify`` take and that
:class:`~activities.slurm.wants.Want` values use (``MaxWall``), the ``format=`` column of ``sacctmgr show qos``
that reads it back (``maxwall``), how a value read back is compared with the wanted one, the value that removes
the limit again (an undo of a limit the QoS did not have before sets it), and the value the contract asks for.
The marker ``Description`` (:func:`~activities.slurm.wants.qos_marker`) is not a limit: it names the owner.
``tests/activities/slurm/test_qos_limits.py`` checks each entry against the real sacctmgr.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from tenantflow.activities.slurm.cli import parse_pipe, same_duration
from tenantflow.models.tenant import Qos, TenantContract


def gpu_tres(gpus: int) -> str:
    """A GPU count as a TRES value (``gres/gpu=16``)."""
    return f"gres/gpu={gpus}"


def same_words(want: str, have: str) -> bool:
    """Comma lists equal in any order and case (``Flags``, descriptions)."""
    return sorted(want.lower().split(",")) == sorted(have.lower().split(","))


def _equal(want: str, have: str) -> bool:
    return want == have


def _holds_tres(want: str, have: str) -> bool:
    return want in have.split(",")


def _same_wall(want: str, have: str) -> bool:
    return bool(have) and same_duration(want, have)


def _same_preempt(want: str, have: str) -> bool:
    # Slurm 22.05 stores a QoS PreemptMode=OFF as 0 and prints it as "cluster" (the cluster's mode is OFF).
    return want.lower() == have.lower() or (want.upper() == "OFF" and have.lower() in ("cluster", "off"))


@dataclass(frozen=True)
class QosLimit:
    """One QoS limit in all its spellings."""

    key: str
    """The sacctmgr key of ``add qos`` / ``modify qos ... set`` and of :attr:`Want.values`."""
    column: str
    """The ``format=`` column of ``sacctmgr show qos`` that reads the limit back."""
    same: Callable[[str, str], bool]
    """Whether the value read back (second) satisfies the wanted one (first)."""
    cleared: str
    """The value ``modify qos ... set KEY=VALUE`` takes to remove the limit."""
    wanted: Callable[[TenantContract, Qos], str | None]
    """The value the contract asks for; None leaves the limit as Slurm has it."""


QOS_LIMITS: tuple[QosLimit, ...] = (
    QosLimit("Priority", "priority", _equal, "0", lambda c, q: str(q.priority)),
    QosLimit("GrpTRES", "grptres", _holds_tres, "gres/gpu=-1", lambda c, q: gpu_tres(q.grp_gpus or c.capacity.gpus)),
    QosLimit("MaxWall", "maxwall", _same_wall, "-1", lambda c, q: q.max_wall),
    QosLimit("Flags", "flags", same_words, "-1", lambda c, q: "DenyOnLimit" if q.deny_on_limit else ""),
    QosLimit("PreemptMode", "preemptmode", _same_preempt, "cluster", lambda c, q: "OFF" if q.preempt_off else None),
)
BY_KEY = {limit.key: limit for limit in QOS_LIMITS}
QOS_FORMAT = ("name", "description", *(limit.column for limit in QOS_LIMITS))


class QosRecord(BaseModel):
    """One row of ``sacctmgr show qos format=QOS_FORMAT -P -n``: the limits by sacctmgr key."""

    name: str
    description: str = ""
    limits: dict[str, str]


def parse_qos(output: str) -> list[QosRecord]:
    return [
        QosRecord(
            name=row["name"],
            description=row["description"],
            limits={limit.key: row[limit.column] for limit in QOS_LIMITS},
        )
        for row in parse_pipe(output, QOS_FORMAT)
    ]


def qos_values(marker: str, c: TenantContract, q: Qos) -> dict[str, str]:
    """The values of one of the tenant's QoS as sacctmgr keys: the owner marker and every limit the contract sets."""
    limits = {limit.key: limit.wanted(c, q) for limit in QOS_LIMITS}
    return {"Description": marker, **{key: value for key, value in limits.items() if value is not None}}
