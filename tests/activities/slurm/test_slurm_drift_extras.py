"""The Slurm part of the drift check on real Slurm: a user association under the tenant's accounts that the
contract does not list is extra; a deleted one is missing from the plan."""

from __future__ import annotations

from tenantflow.activities.drift.extras import slurm_extras
from tenantflow.activities.slurm import steps as slurm
from tenantflow.models.drift import DriftItem, DriftKind
from tenantflow.models.tenant import TenantContract
from tests.activities.slurm.conftest import SlurmLab, step_input
from tests.activities.slurm.test_slurm_layer import apply_all, undo_all


def test_slurm_drift_names_extra_and_missing_associations(lab: SlurmLab, contract: TenantContract) -> None:
    results = apply_all(contract)
    try:
        assert slurm_extras(contract) == []
        alice_only = contract.model_copy(update={"users": contract.users[:1]})
        [extra] = slurm_extras(alice_only)
        assert (extra.kind, extra.name, extra.drift) == ("user", "bob", DriftKind.extra)

        lab.sh("sacctmgr", "-i", "delete", "user", "name=bob", f"account={contract.user_account}")
        drift = [item for step in slurm.plan(step_input(contract)) if (item := DriftItem.of_step(step))]
        assert [(i.kind, i.name, i.drift) for i in drift] == [("user", "bob", DriftKind.missing)]
    finally:
        undo_all(contract, results)
