"""Users a tenant change removes: their Slurm association and Authentik membership go, their home stays.

For every username the recorded contract lists and the new one does not (``facts.remove_users``):

* Slurm: the user's association under the tenant's user account is deleted (``sacctmgr delete user name=
  account= cluster=``), only when that account carries tenantflow's marker for the tenant (``Organization``,
  :func:`activities.slurm.accounting.foreign`) and never while the user has running or pending jobs
  (``squeue``): the step then fails before any write, naming the jobs;
* Authentik: the user leaves the tenant's group (``POST /core/groups/<pk>/remove_user/``), loses the tenant's
  gid that tenantflow gave it (``attributes.gidNumber``; ``PATCH /core/users/<pk>/`` replaces ``attributes``) and is
  deactivated (``{"is_active": false}``, never deleted) only when tenantflow created it for this tenant
  (``tenantflow.io/created-by`` is the tenant's run id, ``tenant/<slug>``); an adopted account stays active and gets
  back what the adoption overwrote where it still holds tenantflow's value
  (:func:`activities.common.adoption.give_back`). A user that is neither in the group nor ours is left alone.

The SSH keys leave the login Secret with ``login.release`` (it renders the new contract's users); the Weka home
directory is kept. The undo (:func:`undo_removed`) re-adds the association and the membership and reactivates.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio import activity

from tenantflow.activities.common.adoption import ADOPTED, give_back
from tenantflow.activities.common.authentik_client import CREATED_BY, AuthentikClient, User
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.activities.common.slurm_jobs import jobs
from tenantflow.activities.slurm.accounting import Want, add_argv, current_values, delete_argv, foreign, read_world
from tenantflow.activities.slurm.wants import want_users
from tenantflow.models import runbook
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import AuthentikUser, EnsureResult, Outcome, SlurmObject
from tenantflow.models.run_ids import onboarding_id
from tenantflow.models.tenant import TenantContract

LAYER = "change"


def ours(user: User, slug: str) -> bool:
    """Whether tenantflow created the Authentik user for this tenant (so it may deactivate it)."""
    return user.attributes.get(CREATED_BY) == onboarding_id(slug)


def user_want(c: TenantContract, username: str) -> Want | None:
    """The association ``c`` gives each of its users, for ``username``."""
    wants = want_users(c)
    return dataclasses.replace(wants[0], name=username) if wants else None


def plan_users(c: TenantContract, usernames: list[str]) -> list[PlanStep]:
    """One Slurm and one identity entry per user to remove, with what the run will do to it."""
    steps: list[PlanStep] = []
    ctl = SlurmCtl.connect(c.cluster)
    world = read_world(ctl, c)
    with AuthentikClient.from_settings() as ak:
        group = ak.groups.named(c.slug)
        for name in usernames:
            other = foreign(world, c.slug, "user", name, c.user_account)
            assoc = world.user(name, c.user_account)
            steps.append(
                PlanStep(
                    layer="slurm",
                    kind="user",
                    name=name,
                    action=Action.leave if assoc is None or other else Action.delete,
                    detail={"account": c.user_account, "why": other or ("no association" if assoc is None else "")},
                )
            )
            user = ak.users.named(name)
            member = user is not None and group is not None and group.pk in user.groups
            deactivate = user is not None and ours(user, c.slug) and user.is_active
            steps.append(
                PlanStep(
                    layer="identity",
                    kind="User",
                    name=name,
                    action=Action.delete if member or deactivate else Action.leave,
                    detail={
                        "leave_group": c.slug if member else "",
                        "deactivate": deactivate,
                        "home": "kept",
                        **(
                            {} if user is None or ours(user, c.slug) else {"account": "not created by tenantflow: kept"}
                        ),
                    },
                )
            )
    return steps


def _remove_association(ctl: SlurmCtl, c: TenantContract, name: str) -> EnsureResult | None:
    world = read_world(ctl, c)
    want = user_want(c, name)
    have = current_values(world, want) if want else None
    if want is None or have is None or foreign(world, c.slug, "user", name, c.user_account):
        return None
    values = {**want.values, **{key: value for key, value in have.items() if value}}  # what it had, to put back
    data = SlurmObject(values=values, cluster=c.slurm.cluster, account=c.user_account)
    ctl.run(delete_argv("user", name, data))
    return EnsureResult(layer=LAYER, kind="user", name=name, outcome=Outcome.deleted, data=data)


def _remove_member(ak: AuthentikClient, c: TenantContract, name: str) -> EnsureResult | None:
    """Leave the group; ours: deactivate; the tenant's gid (``attributes.gidNumber``, which tenantflow set) goes,
    so the former member no longer holds the tenant's primary gid in the directory."""
    user, group = ak.users.named(name), ak.groups.named(c.slug)
    if user is None:
        return None
    member = group is not None and group.pk in user.groups
    tenant_gid = group.attributes.get("gidNumber") if group is not None else None
    patch: dict[str, Any] = {"is_active": False} if ours(user, c.slug) and user.is_active else {}
    if ADOPTED in user.attributes:  # adopted: what the adoption overwrote goes back, the account stays active
        back, _, left = give_back(user, "")
        patch.update(back)
        if left:
            activity.logger.info("change: %s keeps what was changed since its adoption: %s", name, "; ".join(left))
    elif tenant_gid is not None and str(user.attributes.get("gidNumber")) == str(tenant_gid):
        patch["attributes"] = {k: v for k, v in user.attributes.items() if k != "gidNumber"}
    if member and group is not None:
        ak.remove_user(group.pk, user.pk)
    if patch:
        ak.users.patch(user.pk, patch)
    if not (member or patch):
        return None
    previous = {key: getattr(user, key) for key in patch}
    data = AuthentikUser(
        group_pk=group.pk if member and group else None, previous=previous, added_to_group=member, pk=user.pk
    )
    return EnsureResult(layer=LAYER, kind="User", name=name, outcome=Outcome.deleted, data=data)


@defn(runbook.REMOVE_USERS)
def remove_users(inp: StepInput) -> StepResult:
    """Remove each user the change drops from Slurm, then from the Authentik group (deactivating ours)."""
    c = inp.contract
    ctl = SlurmCtl.connect(c.cluster)
    held = jobs(ctl, users=inp.facts.remove_users)
    if held:
        raise fail(
            "Conflict",
            "; ".join(f"user {user} has running or pending jobs {', '.join(ids)}" for user, ids in sorted(held.items()))
            + ": nothing was removed; wait for the jobs to end (or have the tenant cancel them), then apply again",
        )
    results: list[EnsureResult] = []
    try:
        with AuthentikClient.from_settings() as ak:
            for name in inp.facts.remove_users:
                activity.heartbeat(name)
                results += [r for r in (_remove_association(ctl, c, name), _remove_member(ak, c, name)) if r]
    except Exception:
        undo_removed(c, results)  # a step that fails leaves nothing half-removed: the saga never saw it
        raise
    return StepResult(results=results, facts=inp.facts)


def undo_removed(c: TenantContract, results: list[EnsureResult]) -> list[EnsureResult]:
    """Put removed users back: the Slurm association with its values, the group membership, active again."""
    done: list[EnsureResult] = []
    ctl = SlurmCtl.connect(c.cluster)
    with AuthentikClient.from_settings() as ak:
        for res in results:
            if res.outcome is not Outcome.deleted:
                continue
            if res.kind == "user":
                data = res.data_as(SlurmObject)
                where = {"Cluster": data.cluster or "", "Account": data.account or ""}
                if read_world(ctl, c).user(res.name, data.account or "") is None:
                    ctl.run(add_argv(Want("user", res.name, data.values or {}, where)))
            else:
                user = res.data_as(AuthentikUser)
                if user.pk is not None and user.previous:
                    ak.users.patch(user.pk, user.previous)
                if user.pk is not None and user.group_pk and user.added_to_group:
                    ak.add_user(user.group_pk, user.pk)
            done.append(res.model_copy(update={"outcome": Outcome.created}))
    return done
