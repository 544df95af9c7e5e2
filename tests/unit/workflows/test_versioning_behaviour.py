"""Which workflow types pin their runs to a build and which auto-upgrade (workflows/README.md, "Pinned or
auto-upgrade"): the worker pins every type that declares nothing, so a type changing its declaration changes how
its runs move between builds, and must change the table too."""

from __future__ import annotations

from temporalio.common import VersioningBehavior
from temporalio.workflow import _Definition

from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.registry import WORKFLOWS
from tenantflow.worker.run import deployment_config
from tenantflow.workflows.lifecycle_versioned import for_versioned_worker

AUTO_UPGRADE = {"TenantLifecycle"}
"""The types the README's table says auto-upgrade; every other registered type is pinned."""


def test_only_the_lifecycle_auto_upgrades_and_the_rest_take_the_workers_pinned_default() -> None:
    definitions = [_Definition.must_from_class(cls) for cls in for_versioned_worker(list(WORKFLOWS))]
    declared = {definition.name: definition.versioning_behavior for definition in definitions}
    auto, unspecified = VersioningBehavior.AUTO_UPGRADE, VersioningBehavior.UNSPECIFIED
    assert set(declared) >= AUTO_UPGRADE
    assert declared == {name: auto if name in AUTO_UPGRADE else unspecified for name in declared}
    config = deployment_config(WorkerSettings(TENANTFLOW_DEPLOYMENT_NAME="tenantflow", TENANTFLOW_BUILD_ID="b1"))
    assert config is not None and config.default_versioning_behavior == VersioningBehavior.PINNED


def test_an_unversioned_worker_registers_no_versioning_behaviour() -> None:
    """Temporal refuses a task completion naming a behaviour from a worker without versioned deployment options."""
    declared = {_Definition.must_from_class(cls).versioning_behavior for cls in WORKFLOWS}
    assert declared == {VersioningBehavior.UNSPECIFIED}
