"""The activities only a tenant change runs (``TenantChange``): its removal plan, and the undo of its own steps.

``change.plan`` lists what the onboarding plan cannot see because it only looks at what the new contract wants:
the users the recorded contract had and the new one drops (:mod:`activities.change.users`) and the nodes the
change gives back (:mod:`activities.change.capacity`), each with the action the run will take (``delete``, or
``leave`` with the reason when the object is not provably tenantflow's for the tenant). ``change.undo`` puts back
what ``change.drain`` and ``change.remove_users`` did when a change rolls back: drained nodes of ours are resumed,
removed users come back.
"""

from __future__ import annotations

from tenantflow.activities.change import capacity as change_capacity
from tenantflow.activities.change import users as change_users
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.activities.common.slurm_jobs import jobs
from tenantflow.models import runbook
from tenantflow.models.change import DRAIN_REASON
from tenantflow.models.onboarding import StepInput, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult


@defn(runbook.CHANGE_PLAN)
def plan(inp: StepInput) -> list[PlanStep]:
    """The removals of the change: users dropped by the contract, nodes given back (read-only)."""
    c = inp.contract
    steps = change_users.plan_users(c, inp.facts.remove_users) if inp.facts.remove_users else []
    if inp.facts.release_nodes:
        busy = jobs(SlurmCtl.connect(c.cluster), nodes=inp.facts.release_nodes)
        steps += [
            PlanStep(
                layer="capacity",
                kind="Node",
                name=node,
                action=Action.delete,
                detail={
                    "drain": DRAIN_REASON.format(slug=c.slug, run=inp.run_id),
                    "wait_for_jobs": ", ".join(busy.get(node, [])) or "none",
                    "then": f"removed from partition {c.slug} and Reservation {c.reservation_name}, resumed",
                },
            )
            for node in inp.facts.release_nodes
        ]
    return steps


@defn(runbook.CHANGE_UNDO)
def undo(inp: UndoInput) -> list[EnsureResult]:
    """Resume the nodes ``change.drain`` drained (ours only); put back the users ``change.remove_users`` removed."""
    if inp.step == runbook.DRAIN_NODES.short:
        return change_capacity.resume(SlurmCtl.connect(inp.contract.cluster), [r.name for r in inp.results])
    return change_users.undo_removed(inp.contract, inp.results)


ACTIVITIES = [
    change_capacity.preflight,
    plan,
    change_capacity.drain,
    change_capacity.wait_drained,
    change_users.remove_users,
    change_capacity.release_nodes,
    undo,
]
