"""models/hostlist.py: Slurm hostlist expressions expanded and compressed exactly as Slurm does.

The tables are Slurm 22.05's own answers (``scontrol show hostnames EXPR``, ``scontrol show hostlist NAMES``;
neither needs a running slurmctld). :func:`test_the_tables_are_what_scontrol_prints` asks the installed
``scontrol`` again, so the data cannot drift from Slurm; print :func:`scontrol_tables` to extend them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import hostlist
import pytest

from tenantflow.models.hostlist import compress_hostlist, expand_hostlist

HOSTNAMES: dict[str, list[str]] = {
    "gpu-[01-03,07],cpu-1": ["gpu-01", "gpu-02", "gpu-03", "gpu-07", "cpu-1"],
    "rack[1-2]-gpu[01-02]": ["rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"],
    "n[9-11]": ["n9", "n10", "n11"],
    "n9,n10,n11": ["n9", "n10", "n11"],
    "n[08-11]": ["n08", "n09", "n10", "n11"],
    "n[99-101]": ["n99", "n100", "n101"],
    "n[098-101]": ["n098", "n099", "n100", "n101"],
    "gpu-[1-3]": ["gpu-1", "gpu-2", "gpu-3"],
    "n[1-3,5]": ["n1", "n2", "n3", "n5"],
    "login": ["login"],
    "gpu-10,gpu-09,gpu-08": ["gpu-10", "gpu-09", "gpu-08"],
    "n1,n01": ["n1", "n01"],
    "a-1,a-[2-3],b-1": ["a-1", "a-2", "a-3", "b-1"],
    "gpu-[01-02,09-11]": ["gpu-01", "gpu-02", "gpu-09", "gpu-10", "gpu-11"],
    "n[7]": ["n7"],
    "h100-[1-2]": ["h100-1", "h100-2"],
    "[123-124]": ["123", "124"],
    "gpu-[9-10,010]": ["gpu-9", "gpu-10", "gpu-010"],
    "n[9,09-10]": ["n9", "n09", "n10"],
    "n[9-10,09]": ["n9", "n10", "n09"],
    "n[1,01]": ["n1", "n01"],
    "n[0-1,00,000]": ["n0", "n1", "n00", "n000"],
    "node[7-8,07-08]": ["node7", "node8", "node07", "node08"],
    "gpu-[01-16]": [f"gpu-{i:02d}" for i in range(1, 17)],
}
"""``scontrol show hostnames EXPR``."""

HOSTLISTS: dict[tuple[str, ...], str] = {
    ("n9", "n10", "n11"): "n[9-11]",
    ("gpu-02", "gpu-01", "gpu-10", "cpu-1", "login"): "cpu-1,gpu-[01-02,10],login",
    ("rack2-gpu01", "rack1-gpu02", "rack1-gpu01", "rack2-gpu02"): "rack1-gpu[01-02],rack2-gpu[01-02]",
    ("n1", "n01"): "n[01,1]",
    ("n099", "n100", "n101", "n098"): "n[098-101]",
    ("gpu-03",): "gpu-03",
    ("gpu-03", "gpu-03"): "gpu-03",
    ("a-1", "b-1", "a-2", "a-3"): "a-[1-3],b-1",
    ("n1", "n2", "n3", "n5"): "n[1-3,5]",
    ("h100-1", "h100-2"): "h100-[1-2]",
    ("n9-ib0", "n10-ib0"): "n9-ib0,n10-ib0",
    ("gpu-9", "gpu-10", "gpu-010"): "gpu-[9,010,10]",
    ("login", "admin"): "admin,login",
    tuple(f"gpu-{i:02d}" for i in range(16, 0, -1)): "gpu-[01-16]",
    ("n98", "n99", "n100"): "n[98-100]",
    ("n08", "n09", "n10", "n100"): "n[08-10,100]",
    ("n008", "n009", "n010", "n100"): "n[008-010,100]",
    ("gpu01a", "gpu02a"): "gpu01a,gpu02a",
    ("123", "124"): "[123-124]",
    ("n1", "n1-x", "n2"): "n1,n1-x,n2",
    ("x1", "x2", "x03", "x04"): "x[1-2,03-04]",
    ("n9", "n09", "n10"): "n[09,9-10]",
    ("n0", "n00", "n000", "n1"): "n[0,00,000,1]",
    ("node7", "node07", "node8", "node08"): "node[07,7,08,8]",
}
"""``scontrol show hostlist`` of the names, duplicates dropped, in numeric order (python-hostlist's, ties in
string order)."""

PADDING_CLASHES: dict[tuple[str, ...], str] = {
    ("n1", "n01"): "n[1,01]",
    ("gpu-9", "gpu-10", "gpu-010"): "gpu-[9-10,010]",
    ("n9", "n09", "n10"): "n[9-10,09]",
    ("n0", "n00", "n000", "n1"): "n[0-1,00,000]",
    ("node7", "node07", "node8", "node08"): "node[7-8,07-08]",
}
"""The only rows compressed differently from Slurm: one number written with two paddings (``n9`` and ``n09``,
``gpu-10`` and ``gpu-010``), which numeric order puts side by side, so Slurm prints them in that order while
the library ranges the unpadded ones first. Ours is an expression Slurm reads as the same names (its
expansion is in :data:`HOSTNAMES`)."""

THREE_DIMENSIONS = (
    "r[1-2]n[1-2]s[1-2]",
    ["r1n1s1", "r1n1s2", "r2n1s1", "r2n1s2", "r1n2s1", "r1n2s2", "r2n2s1", "r2n2s2"],
)
"""Slurm's expansion of three bracket groups; the library gives the same names in another order."""


@pytest.mark.parametrize(("expr", "names"), HOSTNAMES.items())
def test_expansion_equals_scontrol_show_hostnames(expr: str, names: list[str]) -> None:
    assert expand_hostlist(expr) == names


def test_three_bracket_groups_expand_to_slurms_names() -> None:
    expr, names = THREE_DIMENSIONS
    assert sorted(expand_hostlist(expr)) == sorted(names)


@pytest.mark.parametrize(("names", "expr"), HOSTLISTS.items())
def test_compression_equals_scontrol_show_hostlist(names: tuple[str, ...], expr: str) -> None:
    ours = compress_hostlist(names)
    if names in PADDING_CLASHES:
        assert ours == PADDING_CLASHES[names]
        assert sorted(HOSTNAMES[ours]) == sorted(set(names))
    else:
        assert ours == expr


def test_slurms_compressed_form_expands_to_the_names() -> None:
    for names, expr in HOSTLISTS.items():
        assert sorted(expand_hostlist(expr)) == sorted(set(names)), expr


def test_no_nodes() -> None:
    assert expand_hostlist("") == [] and compress_hostlist([]) == ""


def test_unbalanced_brackets_are_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a Slurm hostlist"):
        expand_hostlist("gpu-[01-03")


def test_a_name_with_hostlist_syntax_cannot_be_compressed() -> None:
    with pytest.raises(ValueError, match="cannot write"):
        compress_hostlist(["gpu-01", "gpu,02"])


def scontrol_tables(slurm_conf: Path) -> tuple[dict[str, list[str]], dict[tuple[str, ...], str], list[str]]:
    """Ask ``scontrol`` for every entry of the tables (and the three-dimension case)."""
    env = {**os.environ, "SLURM_CONF": str(slurm_conf)}

    def show(what: str, arg: str) -> str:
        return subprocess.run(
            ["scontrol", "show", what, arg], env=env, capture_output=True, text=True, check=True, timeout=30
        ).stdout

    hostnames = {expr: show("hostnames", expr).split() for expr in HOSTNAMES}
    hostlists = {
        names: show("hostlist", ",".join(hostlist.numerically_sorted(sorted(set(names))))).strip()
        for names in HOSTLISTS
    }
    return hostnames, hostlists, show("hostnames", THREE_DIMENSIONS[0]).split()


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="Slurm's scontrol is not installed")
def test_the_tables_are_what_scontrol_prints(tmp_path: Path) -> None:
    slurm_conf = tmp_path / "slurm.conf"
    slurm_conf.write_text("ClusterName=hostlists\nSlurmctldHost=localhost\n")
    hostnames, hostlists, three = scontrol_tables(slurm_conf)
    assert hostnames == HOSTNAMES
    assert hostlists == HOSTLISTS
    assert three == THREE_DIMENSIONS[1]
