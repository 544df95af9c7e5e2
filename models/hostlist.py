"""Slurm hostlist expressions (``gpu-[01-08]``) expanded to node names and compressed back, as Slurm does.

Both directions use the ``python-hostlist`` library. Compression is restricted to Slurm's own rule: only a
name's trailing number is ranged (``rack1-gpu[01-02],rack2-gpu[01-02]``, never the library's
``rack[1-2]-gpu[01-02]``), so every expression produced here is one Slurm 22.05 reads, while the library
alone writes ``n[9-10]-ib0``, which ``scontrol`` refuses. tests/unit/models/test_hostlist.py proves both
directions equal to ``scontrol show hostnames`` and ``scontrol show hostlist`` on a recorded table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import groupby

import hostlist

_TRAILING_NUMBER = re.compile(r"\d+$")


def expand_hostlist(expr: str) -> list[str]:
    """``gpu-[01-03,07],cpu-1`` -> ``[gpu-01, gpu-02, gpu-03, gpu-07, cpu-1]`` (in order, without duplicates)."""
    try:
        names: list[str] = hostlist.expand_hostlist(expr.strip())
    except hostlist.BadHostlist as exc:
        raise ValueError(f"{expr!r} is not a Slurm hostlist: {exc}") from None
    return names


def compress_hostlist(names: Iterable[str]) -> str:
    """``[gpu-02, gpu-01, gpu-10, cpu-1]`` -> ``cpu-1,gpu-[01-02,10]``: what ``scontrol show hostlist`` prints
    for the names in numeric order, duplicates dropped (each run of names differing only in their trailing
    number is ranged by the library)."""
    ordered = hostlist.numerically_sorted(sorted(set(names)))
    runs = [list(run) for _, run in groupby(ordered, key=lambda name: _TRAILING_NUMBER.sub("", name))]
    try:
        return ",".join(hostlist.collect_hostlist(run) for run in runs)
    except hostlist.BadHostlist as exc:
        raise ValueError(f"cannot write {sorted(set(names))} as a Slurm hostlist: {exc}") from None
