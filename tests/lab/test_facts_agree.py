"""The lab and the product describe the same real systems from the same public sources, each on its own (the lab
imports none of the product's constants: an import-linter contract, issue 24), so where both state one fact they
must agree. A name the product mistypes (a label, a namespace, a preset's quota, the mount helper's command) fails
here, by name, before any run against the lab fails on it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tenantflow import lab
from tenantflow.activities.common import manifests
from tenantflow.lab.controllers import login_chart
from tenantflow.lab.konduktor import blob, facts
from tenantflow.lab.kubeapi import media_types
from tenantflow.lab.kueue_facts import (
    JOBSET_DEPLOYMENT,
    JOBSET_IMAGE,
    KUEUE_DEPLOYMENT,
    KUEUE_IMAGE,
    ORIGIN_LABEL,
    QUEUE_LABEL,
    image,
)
from tenantflow.lab.weka import csi_facts
from tenantflow.models import content_types, weka_mount
from tenantflow.models import enrollment_workflows as product
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.targets import KubeTarget
from tests.workflows.contract import example_tenant

NAMES = (
    "WORKER_LABEL",
    "MANAGED_BY",
    "SCHEDULING_MANAGER",
    "ADOPTION_REFUSAL",
    "AGENT_NAMESPACE",
    "BYOC_NAMESPACE",
    "AGENT",
    "INSTALLED_BY",
    "INSTALLER",
    "BOOTSTRAP_COMPONENTS",
)


@pytest.mark.parametrize("name", NAMES)
def test_the_product_names_konduktor_as_the_lab_does(name: str) -> None:
    assert getattr(product, name) == getattr(facts, name), f"{name}: the product and the lab's Konduktor differ"


def test_the_product_names_kueue_as_the_lab_does() -> None:
    assert (product.QUEUE_LABEL, product.ORIGIN_LABEL) == (QUEUE_LABEL, ORIGIN_LABEL)
    assert [(d.namespace, d.deployment, d.repository) for d in product.DEPENDENCIES] == [
        (*KUEUE_DEPLOYMENT, KUEUE_IMAGE),
        (*JOBSET_DEPLOYMENT, JOBSET_IMAGE),
    ]
    for dependency in product.DEPENDENCIES:
        assert dependency.image("v0.9.0") == image(dependency.repository, "v0.9.0")


def test_the_product_reads_the_selected_versions_where_the_lab_hub_serves_them() -> None:
    """The Organization fields the product reads the selected Kueue and JobSet versions from are in the schema of
    the lab Hub's Organization CRD."""
    crd = yaml.safe_load((Path(lab.__file__).parent / "crds_enrollment" / "organizations.trainy.ai.yaml").read_text())
    [served] = crd["spec"]["versions"]
    fields = served["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for dependency in product.DEPENDENCIES:
        assert fields[dependency.organization_field] == {"type": "string"}, dependency


@pytest.mark.parametrize(
    ("namespace", "worker"),
    [("forecasting", "forecasting-us"), ("a" * 63, "b" * 63), ("n", "w" * 55), ("n" * 58, "w"), ("research", "x")],
)
def test_the_product_labels_a_worker_as_the_lab_hub_does(namespace: str, worker: str) -> None:
    contract = WorkerEnrollment(
        hub=KubeTarget(context="hub"),
        worker=KubeTarget(context="worker"),
        tenant_namespace=namespace,
        worker_name=worker,
        workload_namespaces=[namespace],
    )
    value = facts.worker_identity(namespace, worker)
    assert product.label_value(contract.worker_identity) == value
    assert facts.valid_label_value(value)


@pytest.mark.parametrize("preset", ["gke-dws", "default"])
def test_the_product_expects_the_preset_the_lab_hub_applies(preset: str) -> None:
    namespaces = ["forecasting", "research"]
    assert product.preset_objects(preset, namespaces) == facts.preset_objects(preset, namespaces)


def test_a_signature_over_the_products_claims_verifies_in_the_lab() -> None:
    """The product signs nothing itself today, but it states the signed bytes; they must be the lab Hub's."""
    claims = {"hub": "https://hub", "namespace": "forecasting", "worker": "forecasting-us", "enrollmentId": "e/1"}
    assert product.signed_claims(claims) == facts.signed_claims(claims)
    key, public = blob.new_key()
    assert blob.verify(blob.redemption_token(blob.encode(claims, key)), public) == claims


@pytest.mark.parametrize("name", ["MERGE_PATCH", "JSON_PATCH", "STRATEGIC_MERGE_PATCH", "APPLY_PATCH"])
def test_the_product_patches_with_the_media_types_the_lab_api_server_takes(name: str) -> None:
    assert getattr(content_types, name) == getattr(media_types, name)


def test_the_product_reaches_weka_as_the_lab_csi_wekafs_expects() -> None:
    assert (weka_mount.DRIVER, weka_mount.REQUIRED_SECRET_KEYS) == (csi_facts.DRIVER, csi_facts.REQUIRED_SECRET_KEYS)
    assert csi_facts.handle_filesystem(weka_mount.filesystem_handle("scratch")) == "scratch"


def test_the_lab_runs_the_products_directory_helper_and_the_product_reads_its_log() -> None:
    specs = [
        weka_mount.DirectorySpec("/scratch/foo", 0, 5000, "2770"),
        weka_mount.DirectorySpec("/home/a", 7, 8, "700"),
    ]
    command = weka_mount.directory_command(specs)
    assert csi_facts.mount_path(command) == weka_mount.MOUNT_PATH
    assert csi_facts.mkdir_run(command) == [("/scratch/foo", 0, 5000, 0o2770), ("/home/a", 7, 8, 0o700)]
    log = csi_facts.before_line("/scratch/foo", 0, 4000, 0o2770) + "\n"
    assert weka_mount.parse_owners(log) == {"/scratch/foo": weka_mount.Owner(0, 4000, 0o2770)}
    assert csi_facts.remove_run(weka_mount.removal_command(["/scratch/foo"])) == ["/scratch/foo"]
    assert weka_mount.parse_removed(csi_facts.removed_line("/scratch/foo")) == {"/scratch/foo"}


def test_the_product_releases_and_finds_the_login_pods_as_the_lab_chart_does() -> None:
    """Flux's HelmRelease group and Helm's instance label, each stated by the product and by the lab's chart."""
    assert manifests.HELM_API.split("/")[0] == login_chart.GROUP
    assert manifests.login_selector(example_tenant()) == {login_chart.INSTANCE_LABEL: "login-tenant-foo"}


def test_the_lab_leaves_a_command_it_cannot_run() -> None:
    """The comparison above can fail: a helper other than the two scripts is not run."""
    command = weka_mount.directory_command([weka_mount.DirectorySpec("/scratch/foo", 0, 5000, "2770")])
    assert csi_facts.mkdir_run([*command[:2], command[2] + " ", *command[3:]]) is None
    assert csi_facts.remove_run(["/bin/sh", "-c", "rm -rf /weka/*", "/weka"]) is None
    assert facts.worker_identity("n", "w" * 60) != facts.worker_identity("n", "w" * 61)
    assert not facts.valid_label_value("-a") and not facts.valid_label_value("a" * 64)
