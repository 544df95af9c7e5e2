"""models/hostlist.py: Slurm hostlist expressions expanded to node names and compressed back."""

from __future__ import annotations

from tenantflow.models.hostlist import compress_hostlist, expand_hostlist


def test_ranges_and_single_names_expand_in_order_keeping_zero_padding() -> None:
    assert expand_hostlist("gpu-[01-03,07],cpu-1") == ["gpu-01", "gpu-02", "gpu-03", "gpu-07", "cpu-1"]


def test_an_empty_expression_is_no_nodes() -> None:
    assert expand_hostlist("") == []


def test_runs_compress_to_ranges_per_prefix() -> None:
    names = [f"gpu-{i:02d}" for i in (*range(1, 9), 10)]
    assert compress_hostlist(names) == "gpu-[01-08,10]"


def test_one_node_has_no_brackets_and_duplicates_count_once() -> None:
    assert compress_hostlist(["gpu-03", "gpu-03"]) == "gpu-03"


def test_compressing_then_expanding_gives_the_sorted_names_back() -> None:
    names = ["gpu-12", "gpu-02", "cpu-7", "gpu-01", "login", "gpu-03"]
    assert sorted(expand_hostlist(compress_hostlist(names))) == sorted(names)
