"""Slurm hostlist expressions: ``gpu-[01-08]`` and back."""

from __future__ import annotations

import re


def hostlist(nodes: list[str]) -> str:
    """Compress ``gpu-01..gpu-08`` into Slurm's ``gpu-[01-08]`` form."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for node in sorted(nodes):
        head = node.rstrip("0123456789")
        digits = node[len(head):]
        if not digits:
            plain.append(node)
            continue
        groups.setdefault((head, len(digits)), []).append(int(digits))
    parts: list[str] = []
    for (head, width), numbers in sorted(groups.items()):
        ranges: list[str] = []
        start = prev = numbers[0]
        for number in [*numbers[1:], None]:
            if number is not None and number == prev + 1:
                prev = number
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if number is not None:
                start = prev = number
        parts.append(f"{head}{ranges[0]}" if len(ranges) == 1 and "-" not in ranges[0]
                     else f"{head}[{','.join(ranges)}]")
    return ",".join(parts + plain)


def expand(expression: str) -> list[str]:
    """Expand ``gpu-[01-03,07],cpu-1`` into node names."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", expression):
        match = re.fullmatch(r"(.*)\[([^\]]*)\]", part)
        if match is None:
            names.append(part)
            continue
        head, body = match.groups()
        for item in body.split(","):
            low, _, high = item.partition("-")
            width = len(low)
            for number in range(int(low), int(high or low) + 1):
                names.append(f"{head}{number:0{width}d}")
    return names
