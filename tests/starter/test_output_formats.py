"""``--output`` takes only the formats the CLI prints (text, json): anything else is refused before the command
runs, with exit 2 and a message naming the supported formats."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.starter.conftest import CLI


def refusal(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "TEMPORAL_ADDRESS": "127.0.0.1:1"},
    )
    return done.returncode, " ".join(re.sub("[│╭╮╰╯─]", " ", done.stderr).split())


@pytest.mark.parametrize(
    "args",
    [
        ["status", "tenant/x", "-o", "yaml"],
        ["list", "--output", "yaml"],
        ["plan", "examples/tenant-foo.yaml", "-o", "table"],
    ],
)
def test_unsupported_output_format_exits_2_naming_the_formats(args: list[str]) -> None:
    code, message = refusal(*args)
    assert code == 2, message
    assert f"{args[-1]!r} is not one of 'text', 'json'" in message
