"""The partition wait: the partition line found in slurmctld's configuration files, and the wait's budget."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from temporalio.testing import ActivityEnvironment

from tenantflow.activities.slurm.partition import configured_nodes, confirm_budget_s

RENDERED = """# rendered from ConfigMap slurm-partitions; do not edit
PartitionName=tenant-a Nodes=gpu-[01-02] MaxTime=UNLIMITED
partitionname=tenant-b nodes=gpu-03 MaxTime=1-00:00:00
PartitionName=tenant-ab Nodes=gpu-04
"""


def test_the_partition_line_in_the_configuration_files() -> None:
    assert configured_nodes(RENDERED, "tenant-a") == ["gpu-01", "gpu-02"]
    assert configured_nodes(RENDERED, "tenant-b") == ["gpu-03"], "keywords are case-insensitive"
    assert configured_nodes(RENDERED, "Tenant-a") is None, "partition names are case-sensitive"
    assert configured_nodes(RENDERED, "tenant") is None


def budget_in_attempt(started_ago: timedelta) -> float:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, start_to_close_timeout=timedelta(minutes=5), started_time=datetime.now(UTC) - started_ago
    )
    return env.run(confirm_budget_s)


def test_the_budget_is_the_setting_and_stays_inside_the_attempt() -> None:
    assert confirm_budget_s() == 180.0, "SLURM_PARTITION_BUDGET_S defaults to 3 min"
    assert budget_in_attempt(timedelta(seconds=5)) == 180.0
    assert 85 <= budget_in_attempt(timedelta(minutes=3)) <= 90, "30 s before the attempt's end"
    assert budget_in_attempt(timedelta(minutes=10)) == 1.0
