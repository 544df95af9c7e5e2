"""Slurm accounting (sacctmgr): read the tenant's objects, compare with the wants, write and undo.

:func:`read_world` reads ``sacctmgr show ... -P -n``; :func:`differences` compares
with a :class:`~activities.slurm.wants.Want`; :class:`Ensurer` writes only what
differs (re-runs make zero sacctmgr writes) and, when a step fails halfway,
removes what it created before raising, so a retry or the saga never finds
half-made debris. :func:`undo_results` deletes what was created and puts back
what was updated; an undo write that fails because slurmdbd or slurmctld cannot be
reached is retryable (:func:`~activities.common.slurm_cli.undo_error`), a refusal is not.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.slurm_cli import (
    ACCOUNT_FORMAT,
    ASSOC_FORMAT,
    Assoc,
    SlurmCtl,
    parse_accounts,
    parse_assocs,
    sacctmgr_write,
    text,
    undo_error,
    word,
    words,
)
from tenantflow.activities.slurm.qos import BY_KEY, QOS_FORMAT, parse_qos, same_words
from tenantflow.activities.slurm.user_delete import delete_users, delete_users_argv
from tenantflow.activities.slurm.wants import Want, allow_accounts, qos_list, qos_marker
from tenantflow.models.results import EnsureResult, Kept, Outcome, SlurmObject
from tenantflow.models.tenant import TenantContract

LAYER = "slurm"
ASSOC_CLEARED = {
    "grptres": "gres/gpu=-1",
    "grpjobs": "-1",
    "maxjobs": "-1",
    "grptresmins": "gres/gpu=-1",
    "defaultqos": "-1",
    "qos": "",
}
"""What removes an account or user association limit (by lower-case sacctmgr key); a QoS limit's is in its
:data:`~activities.slurm.qos.QOS_LIMITS` entry."""


def cleared(kind: str, key: str) -> str | None:
    """The value that removes limit ``key`` of a ``kind`` object; None when ``key`` is not a clearable limit."""
    if kind == "qos":
        return BY_KEY[key].cleared if key in BY_KEY else None
    return ASSOC_CLEARED.get(key.lower())


@dataclass
class World:
    """What sacctmgr says about the tenant's objects."""

    assocs: list[Assoc]
    descriptions: dict[str, str]
    organizations: dict[str, str]
    qos: dict[str, dict[str, str]]

    def account(self, name: str) -> Assoc | None:
        return next((a for a in self.assocs if a.account == name and not a.user), None)

    def user(self, name: str, account: str) -> Assoc | None:
        return next((a for a in self.assocs if a.account == account and a.user == name), None)


def read_world(ctl: SlurmCtl, c: TenantContract) -> World:
    accounts = allow_accounts(c)
    assocs = parse_assocs(
        ctl.show("assoc", {"cluster": word(c.slurm.cluster), "accounts": words(accounts)}, ASSOC_FORMAT)
    )
    records = parse_accounts(ctl.show("account", {"names": words(accounts)}, ACCOUNT_FORMAT))
    qos_rows = parse_qos(ctl.show("qos", {"names": qos_list(c)}, QOS_FORMAT))
    return World(
        assocs=assocs,
        descriptions={r.account: r.description for r in records},
        organizations={r.account: r.organization for r in records},
        qos={q.name: {"Description": q.description, **q.limits} for q in qos_rows},
    )


def current_values(world: World, want: Want) -> dict[str, str] | None:
    """The object's current values under the same keys as ``want.values``; None when it does not exist."""
    if want.kind == "qos":
        return world.qos.get(want.name)
    if want.kind == "user":
        assoc = world.user(want.name, want.where["Account"])
        if assoc is None:
            return None
        return {
            "Account": assoc.account,
            "DefaultAccount": want.values["DefaultAccount"],
            "Fairshare": assoc.fairshare,
            "MaxJobs": assoc.maxjobs,
            "GrpTRESMins": assoc.grptresmins,
            "QOS": ",".join(assoc.qos),
            "DefaultQOS": assoc.defaultqos,
        }
    acc = world.account(want.name)
    if acc is None:
        return None
    if want.kind == "account-qos":
        return {"QOS": ",".join(acc.qos), "DefaultQOS": acc.defaultqos}
    return {
        "Description": world.descriptions.get(want.name, ""),
        "Organization": world.organizations.get(want.name, ""),
        "Parent": acc.parent,
        "Fairshare": acc.fairshare,
        "GrpTRES": acc.grptres,
        "GrpJobs": acc.grpjobs,
    }


def _same(kind: str, key: str, want: str, have: str) -> bool:
    if kind == "qos" and key in BY_KEY:
        return BY_KEY[key].same(want, have)
    if key in ("Description", "Organization"):
        return same_words(want, have)
    if key == "GrpTRES":
        return want in have.split(",")
    return want == have


def foreign(world: World, slug: str, kind: str, name: str, account: str = "") -> str | None:
    """Why the existing object is not provably tenantflow's for ``slug`` (None when it carries our marker or is
    gone): accounts by ``Organization``, QoS by ``Description``, user associations by their account's."""
    if kind in ("account", "account-qos", "user"):
        owner = name if kind != "user" else account
        org = world.organizations.get(owner)
        if org is not None and org.lower() != slug:
            return f"account {owner} has Organization={org or '(empty)'}, not {slug}"
    elif kind == "qos" and name in world.qos:
        description = world.qos[name].get("Description", "")
        if description.lower() != qos_marker(slug):
            return f"QoS {name} has Description={description or '(empty)'}, not {qos_marker(slug)}"
    return None


def differences(want: Want, have: dict[str, str]) -> dict[str, str]:
    """Keys whose current value differs, mapped to their current value."""
    return {k: have.get(k, "") for k, v in want.values.items() if not _same(want.kind, k, v, have.get(k, ""))}


# ---------------------------------------------------------------- writing


def _kv(values: dict[str, str]) -> list[str]:
    out = []
    for key, value in values.items():
        if key == "Flags" and not value:
            out.append("Flags-=DenyOnLimit")
        else:
            out.append(f"{key}={text(value) if key == 'Description' else value}")
    return out


def add_argv(want: Want, names: list[str] | None = None) -> list[str]:
    """``sacctmgr -i add <entity> <name> k=v ...``; with ``names``, one command adding all of them with the values
    of ``want`` (``add user Name=a,b,c ...``)."""
    values = dict(want.values)
    entity = "account" if want.kind == "account" else want.kind
    if want.kind == "account" and values.get("Parent") == "root":
        values.pop("Parent")
    if want.kind == "qos" and not values.get("Flags"):
        values.pop("Flags")
    listed = [f"Name={words(names)}"] if names else []
    return sacctmgr_write("add", entity, "" if names else want.name, *listed, *_kv(values), *_kv(want.where))


ACCOUNT_LEVEL = ("Description", "Organization")


def modify_argvs(
    want: Want, keys: list[str], values: dict[str, str], names: list[str] | None = None
) -> list[list[str]]:
    """``modify ... where ... set ...`` commands: account-level fields without, limits with the cluster;
    ``names`` (same where and values as ``want``) are modified by the same commands (``where name=a,b,c``)."""
    entity = "account" if want.kind in ("account", "account-qos") else want.kind
    where = {"name": words(names or [want.name]), **{k.lower(): word(v) for k, v in want.where.items()}}
    groups = [[k for k in keys if k not in ACCOUNT_LEVEL]]
    if entity == "account":
        groups.append([k for k in keys if k in ACCOUNT_LEVEL])
    argvs = []
    for group in groups:
        if group:
            scope = {k: v for k, v in where.items() if k != "cluster"} if group[0] in ACCOUNT_LEVEL else where
            argvs.append(
                sacctmgr_write("modify", entity, "", *_kv({k: values[k] for k in group}), where=scope, set_mode=True)
            )
    return argvs


def delete_argv(kind: str, name: str, data: SlurmObject) -> list[str]:
    if kind == "user":
        return delete_users_argv([name], data.account or "", data.cluster or "")
    return sacctmgr_write("delete", "qos" if kind == "qos" else "account", name)


@dataclass
class Ensurer:
    """Applies wants one by one; on an error removes what it created in this attempt, then re-raises.

    ``turn`` is the critical section of every writer of this Slurm accounting (a Lease,
    :mod:`activities.common.kubelease`): taken, and the world read again under it, only when the first read
    shows something to write or someone else's object, so a rerun that changes nothing writes nothing at all."""

    ctl: SlurmCtl
    contract: TenantContract
    turn: Callable[[], AbstractContextManager[None]] = nullcontext
    results: list[EnsureResult] = field(default_factory=list)

    def ensure(self, want: Want, world: World) -> None:
        have = current_values(world, want)
        data = SlurmObject(
            values=want.values, cluster=self.contract.slurm.cluster, account=want.where.get("Account", "")
        )
        if (conflict := self._foreign(want, world)) is not None:
            raise conflict
        if have is None:
            if want.kind == "account-qos":
                raise fail("NotFound", f"Slurm account {want.name} does not exist; run slurm.accounts first")
            try:
                self.ctl.run(add_argv(want))
            except Exception:
                if (conflict := self._raced(want)) is None:
                    raise
                raise conflict from None
            if want.kind in ("account", "qos") and (conflict := self._raced(want, read_back=True)) is not None:
                raise conflict
            outcome = Outcome.created
        else:
            changed = differences(want, have)
            if changed and want.kind == "user" and "Account" in changed:
                raise fail("Conflict", f"user {want.name} has no association with account {want.where['Account']}")
            if changed:
                for argv in modify_argvs(want, list(changed), want.values):
                    self.ctl.run(argv)
                data = SlurmObject(values=data.values, cluster=data.cluster, account=data.account, previous=changed)
            outcome = Outcome.updated if changed else Outcome.unchanged
        self.results.append(EnsureResult(layer=LAYER, kind=want.kind, name=want.name, outcome=outcome, data=data))

    def _foreign(self, want: Want, world: World) -> Exception | None:
        """The Conflict when ``world`` holds ``want``'s object and it is not provably ours; None otherwise."""
        other = foreign(world, self.contract.slug, want.kind, want.name, want.where.get("Account", ""))
        if other is None or self._legacy_qos(world, want):
            return None
        field = "slurm.team_account" if want.name == self.contract.team_account else "slug"
        return fail(
            "Conflict",
            f"Slurm {want.kind} {want.name} already exists and is not tenantflow's for "
            f"{self.contract.slug} ({other}); it is not adopted: pick another {field} or remove it by hand",
        )

    def _raced(self, want: Want, read_back: bool = False) -> Exception | None:
        """The Conflict of :meth:`_foreign` when another run added the name since this step read the world: after
        a failed add (sacctmgr saw it), or read back after one that succeeded (slurmdbd stores two concurrent
        adds of a name as one, with the last one's values). None when there is none, or when the world cannot be
        read after a failed add (its error stands)."""
        try:
            data = SlurmObject(values=want.values, account=want.where.get("Account", ""))
            named = EnsureResult(layer=LAYER, kind=want.kind, name=want.name, outcome=Outcome.created, data=data)
            world = read_world_of(self.ctl, [named])
        except Exception:
            if read_back:
                raise
            return None
        return self._foreign(want, world)

    def _legacy_qos(self, world: World, want: Want) -> bool:
        """A QoS made before QoS carried the marker: unmarked (Slurm shows its name or nothing) and listed by
        the tenant account, which carries ours; it is adopted and gets the marker."""
        description = world.qos.get(want.name, {}).get("Description", "")
        account = world.account(self.contract.slug)
        return (
            want.kind == "qos"
            and description in ("", want.name)
            and account is not None
            and want.name in account.qos
            and foreign(world, self.contract.slug, "account", account.account) is None
        )

    def apply(self, wants: list[Want], world: World) -> None:
        """Ensure each want in turn (one sacctmgr write per object that differs)."""
        for want in wants:
            heartbeat({"slurm": f"{want.kind} {want.name}"})
            self.ensure(want, world)

    def settled(self, wants: list[Want], world: World) -> bool:
        """Whether ``world`` already holds every want as it should, each provably ours: nothing to write."""
        for want in wants:
            have = current_values(world, want)
            other = foreign(world, self.contract.slug, want.kind, want.name, want.where.get("Account", ""))
            if have is None or other is not None or differences(want, have):
                return False
        return True

    def run(self, wants: list[Want]) -> list[EnsureResult]:
        world = read_world(self.ctl, self.contract)
        if self.settled(wants, world):
            self.apply(wants, world)
            return self.results
        with self.turn():
            world = read_world(self.ctl, self.contract)
            try:
                self.apply(wants, world)
            except Exception:
                undo_results(self.ctl, self.contract.slug, list(reversed(self.results)))
                raise
        return self.results


def undo_results(
    ctl: SlurmCtl, slug: str, results: list[EnsureResult], before_delete: Callable[[EnsureResult], None] | None = None
) -> list[EnsureResult]:
    """Delete what was created and put back what was updated, newest first; an object that does not carry
    tenantflow's marker for ``slug`` is left alone and reported so (outcome unchanged, :class:`Kept`). Created
    user associations go first, many a command (:mod:`activities.slurm.user_delete`): nothing of the tenant
    depends on them."""
    done: list[EnsureResult] = []
    world = read_world_of(ctl, results)

    def other_of(res: EnsureResult) -> str | None:
        made = res.outcome in (Outcome.created, Outcome.updated)
        return foreign(world, slug, res.kind, res.name, res.data_as(SlurmObject).account or "") if made else None

    users = [r for r in results if r.kind == "user" and r.outcome == Outcome.created and other_of(r) is None]
    for res in users:
        if before_delete is not None:
            before_delete(res)
    deleted = delete_users(ctl, users, lambda name, detail: undo_error("user", name, detail))
    for res in results:
        kind, data = res.kind, res.data_as(SlurmObject)
        heartbeat({"undo": f"{kind} {res.name}"})
        if (res.name, data.account or "") in deleted and kind == "user" and res.outcome == Outcome.created:
            done.append(res.model_copy(update={"outcome": deleted[(res.name, data.account or "")]}))
            continue
        other = other_of(res)
        if other is not None:
            done.append(
                res.model_copy(
                    update={
                        "outcome": Outcome.unchanged,
                        "data": Kept(kept=f"left alone: not provably made by tenantflow for {slug}: {other}"),
                    }
                )
            )
            continue
        if res.outcome == Outcome.created:
            if before_delete is not None:
                before_delete(res)
            out = ctl.run(delete_argv(kind, res.name, data), check=False)
            gone_before = "Nothing deleted" in out.stdout + out.stderr
            if out.exit_code != 0 and not gone_before:
                raise undo_error(kind, res.name, out.stderr or out.stdout)
            done.append(res.model_copy(update={"outcome": Outcome.absent if gone_before else Outcome.deleted}))
        elif res.outcome == Outcome.updated and data.previous:
            previous = {k: v or cleared(kind, k) or v for k, v in data.previous.items()}
            want = Want(
                kind,
                res.name,
                data.values or {},
                {"Cluster": data.cluster or ""} | ({"Account": data.account or ""} if kind == "user" else {}),
            )
            outcome = Outcome.absent
            keys = [k for k in previous if cleared(kind, k) is not None or previous[k]]
            for argv in modify_argvs(want, keys, previous):
                out = ctl.run(argv, check=False)
                if out.exit_code == 0:
                    outcome = Outcome.updated
                elif "Nothing modified" not in out.stdout + out.stderr:
                    raise undo_error(kind, res.name, out.stderr or out.stdout)
            done.append(res.model_copy(update={"outcome": outcome}))
        else:
            done.append(res.model_copy(update={"outcome": Outcome.absent}))
    return done


def read_world_of(ctl: SlurmCtl, results: list[EnsureResult]) -> World:
    """What sacctmgr says about the accounts and QoS named in ``results`` (their markers)."""
    accounts = sorted(
        {r.name for r in results if r.kind in ("account", "account-qos")}
        | {a for r in results if r.kind == "user" and (a := r.data_as(SlurmObject).account)}
    )
    qos = sorted({r.name for r in results if r.kind == "qos"})
    records = parse_accounts(ctl.show("account", {"names": words(accounts)}, ACCOUNT_FORMAT)) if accounts else []
    rows = parse_qos(ctl.show("qos", {"names": words(qos)}, QOS_FORMAT)) if qos else []
    return World(
        assocs=[],
        descriptions={r.account: r.description for r in records},
        organizations={r.account: r.organization for r in records},
        qos={q.name: {"Description": q.description} for q in rows},
    )
