"""User associations in batches: one ``sacctmgr`` command for many users instead of one per user.

sacctmgr takes a comma-separated list of names wherever it takes a user name: ``add user
Name=a,b,c Account=X ...`` adds every listed user to the account with the same settings in one
request to slurmdbd and one commit, and ``modify user where name=a,b,c account=X cluster=C set
...`` changes all of them (sacctmgr(1): ``Names=<user_name>[,<user_name>,...]``; SchedMD/slurm
src/sacctmgr/user_functions.c splits the names with ``slurm_addto_char_list``, and the man page's
PERFORMANCE section asks programs to keep sacctmgr calls to the minimum). A tenant of 300 users
then costs a few commands, not 300 execs in the slurmctld pod.

The semantics per association stay those of :class:`~activities.slurm.accounting.Ensurer`: every
user is compared with what sacctmgr shows, an association whose account is not tenantflow's for
the tenant is refused (checked for every user before anything is written), a missing one is
added, a differing one is modified (its previous values recorded for undo), an equal one is left
alone; a failure removes what this attempt created.
"""

from __future__ import annotations

from collections.abc import Iterator

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.slurm_cli import BATCH
from tenantflow.activities.slurm.accounting import (
    LAYER,
    Ensurer,
    World,
    add_argv,
    current_values,
    differences,
    foreign,
    modify_argvs,
)
from tenantflow.activities.slurm.wants import Want
from tenantflow.models.results import EnsureResult, Outcome, SlurmObject


def chunks(wants: list[Want]) -> Iterator[list[Want]]:
    """``wants`` grouped by identical settings (values and where), each group cut into lists of :data:`BATCH`."""
    groups: dict[tuple[object, ...], list[Want]] = {}
    for want in wants:
        groups.setdefault((*want.values.items(), *want.where.items()), []).append(want)
    for group in groups.values():
        for start in range(0, len(group), BATCH):
            yield group[start : start + BATCH]


class UserBatchEnsurer(Ensurer):
    """An :class:`Ensurer` for ``user`` wants that writes many associations per sacctmgr command."""

    def apply(self, wants: list[Want], world: World) -> None:
        missing: list[Want] = []
        differing: dict[tuple[str, ...], list[tuple[Want, dict[str, str]]]] = {}
        unchanged: list[Want] = []
        for want in wants:
            have = current_values(world, want)
            other = foreign(world, self.contract.slug, want.kind, want.name, want.where.get("Account", ""))
            if other is not None and have is None:
                raise fail(
                    "Conflict",
                    f"Slurm user {want.name} is not added under account {want.where.get('Account')}: it is not "
                    f"tenantflow's for {self.contract.slug} ({other}); pick another slurm.team_account",
                )
            if have is None:
                missing.append(want)
                continue
            if other is not None:
                raise fail(
                    "Conflict",
                    f"Slurm user {want.name} already exists and is not tenantflow's for {self.contract.slug} "
                    f"({other}); it is not adopted: pick another slug or remove it by hand",
                )
            changed = differences(want, have)
            if "Account" in changed:
                raise fail("Conflict", f"user {want.name} has no association with account {want.where['Account']}")
            if changed:
                differing.setdefault(tuple(sorted(changed)), []).append((want, changed))
            else:
                unchanged.append(want)
        for batch in chunks(missing):
            self.ctl.run(add_argv(batch[0], [w.name for w in batch]))
            self._record(batch, Outcome.created)
        for keys, pairs in differing.items():
            for batch in chunks([want for want, _ in pairs]):
                names = [w.name for w in batch]
                for argv in modify_argvs(batch[0], list(keys), batch[0].values, names):
                    self.ctl.run(argv)
                previous = {want.name: changed for want, changed in pairs}
                self._record(batch, Outcome.updated, previous)
        self._record(unchanged, Outcome.unchanged)
        position = {want.name: index for index, want in enumerate(wants)}
        self.results.sort(key=lambda result: position[result.name])

    def _record(self, wants: list[Want], outcome: Outcome, previous: dict[str, dict[str, str]] | None = None) -> None:
        for want in wants:
            data = SlurmObject(
                values=want.values,
                cluster=self.contract.slurm.cluster,
                account=want.where.get("Account", ""),
                previous=(previous or {}).get(want.name),
            )
            self.results.append(EnsureResult(layer=LAYER, kind=want.kind, name=want.name, outcome=outcome, data=data))
        heartbeat({"slurm": {"users": len(self.results), "outcome": outcome.value}})
