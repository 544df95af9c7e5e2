"""What tenantflow reads of the ``konduktor`` CLI itself: the blob's form from ``worker bootstrap --help``, the version
at preflight (refused outside the supported range), and a prompt with no newline after it, answered on a
pseudo-terminal only when told."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.cli_prompt import PromptSession
from tenantflow.activities.common.settings import settings
from tenantflow.activities.hub.steps import cli_version
from tenantflow.lab.konduktor.cli import DIALECT_ENV
from tests.enrollment.conftest import Lab, start_lab


@pytest.fixture
def greenfield(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=False)


def test_the_file_form_is_used_only_when_help_documents_it(greenfield: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    worker = greenfield.contract().worker
    assert konduktor_cli.blob_file_option(worker) == "--blob-file"
    monkeypatch.setenv(DIALECT_ENV, "table")
    assert konduktor_cli.blob_file_option(worker) is None, "the runbook's positional blob only"


def test_a_cli_version_outside_the_range_is_refused_naming_range_and_fix(
    greenfield: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = greenfield.contract().worker
    assert cli_version(worker).ok, "the stand-in's version is supported"
    newer = tmp_path / "konduktor-1.3"
    newer.write_text('#!/bin/sh\necho "konduktor, version 1.3.0"\n')
    newer.chmod(0o755)
    monkeypatch.setenv("KONDUKTOR_BIN", str(newer))
    settings.cache_clear()
    refused = cli_version(worker)
    assert not refused.ok and "konduktor, version 1.3.0" in refused.message
    assert ">= 0.4, < 1.0" in refused.message and "KONDUKTOR_BIN" in refused.fix


def test_a_prompt_without_newline_is_read_and_answered_only_when_told(tmp_path: Path) -> None:
    answered = tmp_path / "answered"
    session = PromptSession(
        ["sh", "-c", f'echo "plan: create it"; printf "Go ahead? (y/n): "; read a; echo "$a" > {answered}; echo done'],
        secrets=["create"],
    )
    try:
        text = session.read_to_prompt(30)
        assert text == "plan: <secret> it\nGo ahead? (y/n): ", "as printed, the secret redacted, no newline added"
        assert session.proc.poll() is None and not answered.exists(), "it still waits at its prompt"
        code, rest = session.answer("y", 30)
    finally:
        session.close()
    assert (code, rest, answered.read_text()) == (0, "done\n", "y\n")
