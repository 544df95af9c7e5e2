"""The lab's Slinky stand-in: the Controller is served from the upstream CRD (strict schema), its ``extraConf``
becomes the last section of slurm.conf as Slinky's ``buildSlurmConf`` writes it, and each change costs one
``scontrol reconfigure`` in the slurmctld pod, as the reconfigure sidecar runs it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tenantflow.lab.controllers.slinky import CONTROLLER, GROUP, NAMESPACE, RESOURCE, SlinkyOperator, with_extra_conf
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.seed import seed_tenant_cluster
from tenantflow.models.content_types import MERGE_PATCH

BASE = "ClusterName=production\nInclude partitions.conf\n"
LINE = "PartitionName=tenant-foo Nodes=gpu-[01-02] State=UP"


def test_extra_conf_is_the_last_section_and_goes_when_empty() -> None:
    text = with_extra_conf(BASE, LINE)
    assert text == f"{BASE}#\n### EXTRA CONFIG ###\n{LINE}\n"
    assert with_extra_conf(text, "") == BASE
    assert with_extra_conf(text, "SchedulerParameters=bf_continue") == (
        f"{BASE}#\n### EXTRA CONFIG ###\nSchedulerParameters=bf_continue\n"
    )


def test_the_upstream_schema_refuses_what_slinky_would() -> None:
    store = Store()
    seed_tenant_cluster(store, ldap_bind_password="unused")
    body = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Controller",
        "metadata": {"name": CONTROLLER, "namespace": NAMESPACE},
        "spec": {"extraConf": ["PartitionName=x"]},
    }
    with pytest.raises(ApiError) as refused:
        store.create(body, NAMESPACE)
    assert refused.value.code == 422 and "extraConf" in str(refused.value)


def test_each_change_is_rendered_and_reconfigured_once(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(BASE)
    ran: list[list[str]] = []

    async def exec_(
        namespace: str, pod: str, container: str | None, argv: list[str], stdin: bytes
    ) -> tuple[str, str, int]:
        ran.append([namespace, pod, *argv])
        return "", "", 0

    async def scenario() -> None:
        store = Store()
        seed_tenant_cluster(store, ldap_bind_password="unused")
        operator = SlinkyOperator(store, conf, exec_, lambda lines: None)
        operator.ensure_controller()
        store.subscribe(operator.on_event, replay=True)
        for extra in (LINE, LINE, ""):
            store.patch(GROUP, RESOURCE, CONTROLLER, {"spec": {"extraConf": extra}}, MERGE_PATCH, namespace=NAMESPACE)
            for _ in range(5):
                await asyncio.sleep(0)
            assert LINE in conf.read_text() if extra else conf.read_text() == BASE

    asyncio.run(scenario())
    assert ran == [[NAMESPACE, "slurmctld-0", "scontrol", "reconfigure"]] * 2, "no change, no reconfigure"
