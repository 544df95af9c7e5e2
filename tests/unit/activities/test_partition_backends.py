"""The slinky backend's edit of ``extraConf``: only the tenant's ``PartitionName=`` line changes."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.settings import settings
from tenantflow.activities.slurm.partition_backends import chosen
from tenantflow.activities.slurm.partition_backends.slinky import partition_name, with_line

PLATFORM = "SchedulerParameters=bf_continue\nPartitionName=other Nodes=gpu-09 MaxTime=1:00:00\n"


def test_a_new_line_is_appended_and_the_others_kept() -> None:
    got = with_line(PLATFORM, "t1", "PartitionName=t1 Nodes=gpu-01")
    assert got == PLATFORM + "PartitionName=t1 Nodes=gpu-01\n"


def test_a_line_is_replaced_in_place_and_removed() -> None:
    text = with_line(PLATFORM, "other", "PartitionName=other Nodes=gpu-10")
    assert text == "SchedulerParameters=bf_continue\nPartitionName=other Nodes=gpu-10\n"
    assert with_line(text, "other", None) == "SchedulerParameters=bf_continue\n"
    assert with_line("", "t1", None) == ""


def test_partition_names_are_matched_exactly_and_the_keyword_in_any_case() -> None:
    assert partition_name("partitionname=t1 Nodes=gpu-01") == "t1"
    assert partition_name("PartitionName=t10 Nodes=gpu-01") != "t1"
    assert partition_name("NodeName=gpu-01") is None
    assert with_line("PartitionName=t10 Nodes=gpu-02\n", "t1", None) == "PartitionName=t10 Nodes=gpu-02\n"


def test_an_unknown_backend_names_the_setting_and_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_PARTITION_BACKEND", "sunk")
    settings.cache_clear()
    try:
        with pytest.raises(ApplicationError, match=r"SLURM_PARTITION_BACKEND='sunk' .* one of include, slinky"):
            chosen()
    finally:
        settings.cache_clear()
    assert chosen("slinky").name == "slinky"
