"""Slurm hostlist expressions: ``gpu-[01-08]`` and back."""

from __future__ import annotations

import re
from collections.abc import Iterable

_HOST = re.compile(r"^([A-Za-z][A-Za-z0-9-]*?)(\d*)$")


def expand_hostlist(expr: str) -> list[str]:
    """``gpu-[01-03,07],cpu-1`` -> ``[gpu-01, gpu-02, gpu-03, gpu-07, cpu-1]``."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", expr.strip()):
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if match is None:
            names.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        for item in ranges.split(","):
            low, _, high = item.partition("-")
            width = len(low)
            for number in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{number:0{width}d}{suffix}")
    return names


def compress_hostlist(names: Iterable[str]) -> str:
    """``[gpu-01 .. gpu-08, gpu-10]`` -> ``gpu-[01-08,10]`` (Slurm's form: sorted, ranges per prefix)."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in sorted(set(names)):
        match = _HOST.match(name)
        if match is None or not match.group(2):
            plain.append(name)
            continue
        prefix, digits = match.groups()
        groups.setdefault((prefix, len(digits)), []).append(int(digits))
    parts = list(plain)
    for (prefix, width), numbers in sorted(groups.items()):
        numbers.sort()
        ranges: list[str] = []
        start = prev = numbers[0]
        for number in [*numbers[1:], None]:
            if number is not None and number == prev + 1:
                prev = number
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if number is not None:
                start = prev = number
        single = len(numbers) == 1
        parts.append(f"{prefix}{ranges[0]}" if single else f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)
