"""Results of ensure activities, checks and whole runs, and the typed undo data each ensure records.

An :class:`EnsureResult` carries in ``data`` what its undo needs, one model per kind of record
(:data:`UndoData`). Recorded histories hold this data as plain JSON objects without a type tag, so
the model is chosen from the keys the object has (:func:`undo_data_tag`) and each model writes back
exactly the keys that were set: old histories decode, and new results encode, to the same JSON.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import Discriminator, Field, SerializerFunctionWrapHandler, Tag, model_serializer

from tenantflow.models.base import Strict


class Outcome(StrEnum):
    created = "created"
    adopted = "adopted"
    updated = "updated"
    unchanged = "unchanged"
    deleted = "deleted"
    absent = "absent"


class UndoRecord(Strict):
    """Base of the undo data models: serialises only the keys that were set, as the recorded JSON has them
    (fields are declared in the order the recorded JSON has its keys)."""

    tag: ClassVar[str] = "none"
    keys: ClassVar[tuple[str, ...]] = ()
    """Keys any of which identifies this model in untagged JSON (checked in :data:`UNDO_RECORDS` order)."""

    @model_serializer(mode="wrap")
    def _set_keys_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {key: value for key, value in dumped.items() if key in self.model_fields_set}


class NoUndoData(UndoRecord):
    """Nothing recorded: a creation (undone by name), an unchanged object, or a planned creation."""


class KubeBefore(UndoRecord):
    """A Kubernetes object we patched (updated or adopted): the merge patch that puts the owned fields back."""

    tag, keys = "kube-before", ("before",)
    before: dict[str, Any] = Field(default_factory=dict)


class LabelledNodes(UndoRecord):
    """The nodes the reservation operator labelled for the tenant (``capacity.wait_reservation``)."""

    tag, keys = "labelled-nodes", ("labelled",)
    labelled: list[str] = Field(default_factory=list)


class CordonState(UndoRecord):
    """A WorkerCluster cordon this run set or cleared."""

    tag, keys = "cordon", ("cordoned",)
    cordoned: bool = False


class PresetChoice(UndoRecord):
    """The scheduling preset written to a WorkerCluster."""

    tag, keys = "preset", ("preset",)
    preset: str = ""


class PresetRelease(UndoRecord):
    """A preset object whose ownership labels were dropped (the object stays)."""

    tag, keys = "released", ("released",)
    released: bool = True


class AuthentikUser(UndoRecord):
    """An Authentik user we created or changed: its pk, the tenant group and what we overwrote."""

    tag, keys = "authentik-user", ("group_pk",)
    group_pk: str | None = None
    previous: dict[str, Any] | None = None
    added_to_group: bool | None = None
    pk: int | None = None
    wrote: dict[str, Any] | None = None
    """What we wrote over ``previous`` (absent in results recorded before it was kept): undo puts a field back only
    while it still holds it."""


class AuthentikGroup(UndoRecord):
    """The tenant's Authentik group: its pk, the gid we gave it and the parents/attributes we overwrote."""

    tag, keys = "authentik-group", ("gid",)
    pk: str | None = None
    gid: int | None = None
    previous: dict[str, Any] | None = None


class Restored(UndoRecord):
    """What an identity undo put back (field names), whether the user left the group, and what it left alone."""

    tag, keys = "restored", ("restored",)
    restored: list[str] = Field(default_factory=list)
    left_group: bool | None = None
    left_alone: list[str] | None = None
    """Fields not put back because they no longer hold what tenantflow wrote (someone changed them since)."""


class Kept(UndoRecord):
    """Why an undo left an object in place."""

    tag, keys = "kept", ("kept",)
    kept: str = ""


class SlurmObject(UndoRecord):
    """A sacctmgr object (account, QoS, user association): the wanted values, where it lives, what it had."""

    tag, keys = "slurm-object", ("values", "cluster", "account")
    values: dict[str, str] | None = None
    cluster: str | None = None
    account: str | None = None
    previous: dict[str, str] | None = None


class SlurmPartition(UndoRecord):
    """The tenant's partition line, the line it replaced (None: there was none) and the backend that holds it."""

    tag, keys = "slurm-partition", ("line",)
    line: str = ""
    previous: str | None = None
    nodes: str = ""
    backend: str | None = Field(
        None,
        exclude_if=lambda backend: backend is None,
        description="the partition backend (SLURM_PARTITION_BACKEND) the line was written to, so an undo removes it "
        "there even after the setting changed; None (left out) in results recorded before backends existed and in "
        "what an offboarding plans, whose undo uses the configured backend",
    )


class QuotaLimits(Strict):
    hard: int
    soft: int


class WekaQuota(UndoRecord):
    """A Weka directory quota: where it is (filesystem uid, inode) and the limits it had before."""

    tag, keys = "weka-quota", ("inode_id", "filesystem_uid")
    previous: QuotaLimits | None = None
    filesystem_uid: str | None = None
    inode_id: int | None = None
    path: str | None = None


class DirectoryOwner(Strict):
    """A directory's owner, group and permission bits (octal, as ``stat -c %a`` prints them)."""

    uid: int
    gid: int
    mode: str = Field(..., pattern=r"^[0-7]{1,4}$")


class WekaDirectory(UndoRecord):
    """A directory on a Weka filesystem; for one whose owner was corrected, the owner it had and the one set."""

    tag, keys = "weka-directory", ("filesystem",)
    filesystem: str = ""
    path: str = ""
    previous: DirectoryOwner | None = None
    owner: DirectoryOwner | None = None


class WekaObject(UndoRecord):
    """A Weka organization, filesystem or user, or a Kubernetes object, by the uid recorded at create time."""

    tag, keys = "weka-object", ("uid",)
    uid: str | None = None


class TokenRef(UndoRecord):
    """The Weka org token written into the CSI Secret."""

    tag, keys = "token", ("token_uid",)
    token_uid: str | None = None


class PvcSize(UndoRecord):
    """A PVC we grew: its size before."""

    tag, keys = "pvc-size", ("previous_size",)
    previous_size: str = ""


UNDO_RECORDS: tuple[type[UndoRecord], ...] = (
    AuthentikUser,
    AuthentikGroup,
    SlurmObject,
    SlurmPartition,
    WekaQuota,
    WekaDirectory,
    WekaObject,
    TokenRef,
    PvcSize,
    KubeBefore,
    LabelledNodes,
    CordonState,
    PresetChoice,
    PresetRelease,
    Restored,
    Kept,
    NoUndoData,
)


def undo_data_tag(value: Any) -> str:
    """The model of a piece of undo data: its own for a model, else the first whose keys the JSON object has."""
    if isinstance(value, UndoRecord):
        return value.tag
    present = set(value) if isinstance(value, dict) else set()
    return next((record.tag for record in UNDO_RECORDS if present & set(record.keys)), NoUndoData.tag)


UndoData = Annotated[
    Annotated[AuthentikUser, Tag(AuthentikUser.tag)]
    | Annotated[AuthentikGroup, Tag(AuthentikGroup.tag)]
    | Annotated[SlurmObject, Tag(SlurmObject.tag)]
    | Annotated[SlurmPartition, Tag(SlurmPartition.tag)]
    | Annotated[WekaQuota, Tag(WekaQuota.tag)]
    | Annotated[WekaDirectory, Tag(WekaDirectory.tag)]
    | Annotated[WekaObject, Tag(WekaObject.tag)]
    | Annotated[TokenRef, Tag(TokenRef.tag)]
    | Annotated[PvcSize, Tag(PvcSize.tag)]
    | Annotated[KubeBefore, Tag(KubeBefore.tag)]
    | Annotated[LabelledNodes, Tag(LabelledNodes.tag)]
    | Annotated[CordonState, Tag(CordonState.tag)]
    | Annotated[PresetChoice, Tag(PresetChoice.tag)]
    | Annotated[PresetRelease, Tag(PresetRelease.tag)]
    | Annotated[Restored, Tag(Restored.tag)]
    | Annotated[Kept, Tag(Kept.tag)]
    | Annotated[NoUndoData, Tag(NoUndoData.tag)],
    Discriminator(undo_data_tag),
]
"""What an undo needs, typed per kind of record; decoded from untagged JSON by :func:`undo_data_tag`."""

D = TypeVar("D", bound=UndoRecord)


class EnsureResult(Strict):
    """What one idempotent ensure did to one object."""

    layer: str
    kind: str
    name: str
    namespace: str | None = None
    outcome: Outcome
    data: UndoData = Field(default_factory=NoUndoData)

    @property
    def wrote(self) -> bool:
        return self.outcome not in (Outcome.unchanged, Outcome.absent)

    def data_as(self, model: type[D]) -> D:
        """The undo data as ``model``; an empty ``model`` when nothing was recorded (a planned creation)."""
        if isinstance(self.data, model):
            return self.data
        if isinstance(self.data, NoUndoData):
            return model()
        raise TypeError(
            f"{self.layer} {self.kind} {self.name}: undo data is {type(self.data).__name__}, not {model.__name__}"
        )


class Severity(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


class Finding(Strict):
    """One check's verdict, with what to do about it. Built with :meth:`passed`, :meth:`failed`, :meth:`verdict`
    or :meth:`of_problem`: a passed check is ``info`` and has no fix."""

    check: str
    ok: bool
    severity: Severity = Severity.error
    message: str
    fix: str = ""

    @property
    def blocks(self) -> bool:
        """A failed check of ``error`` severity: it stops a run (a ``warning`` is reported and the run goes on)."""
        return not self.ok and self.severity is Severity.error

    @classmethod
    def passed(cls, check: str, message: str) -> Finding:
        return cls(check=check, ok=True, severity=Severity.info, message=message)

    @classmethod
    def failed(cls, check: str, message: str, fix: str = "", severity: Severity = Severity.error) -> Finding:
        return cls(check=check, ok=False, severity=severity, message=message, fix=fix)

    @classmethod
    def verdict(cls, check: str, ok: bool, message: str, fix: str = "") -> Finding:
        """:meth:`passed` when ``ok``, else an error with ``fix``."""
        return cls.passed(check, message) if ok else cls.failed(check, message, fix)

    @classmethod
    def of_problem(cls, check: str, problem: str | None, ok_message: str, fix: str = "") -> Finding:
        """:meth:`passed` with ``ok_message`` when there is no ``problem``, else an error saying the problem."""
        return cls.passed(check, ok_message) if problem is None else cls.failed(check, problem, fix)
