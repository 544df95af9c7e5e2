"""A small reader of Dockerfile instructions: continuation lines joined, comments dropped, grouped by stage."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [i.args for i in self.instructions if i.keyword == keyword]


def instructions(path: Path) -> list[Instruction]:
    logical: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    return [Instruction(*[*re.split(r"\s+", line, maxsplit=1), ""][:2]) for line in logical]


def stages(path: Path) -> list[Stage]:
    found: list[Stage] = []
    for instruction in instructions(path):
        keyword = instruction.keyword.upper()
        if keyword == "FROM":
            words = instruction.args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            found.append(Stage(words[0], name))
        elif found:
            found[-1].instructions.append(Instruction(keyword, instruction.args))
    return found
