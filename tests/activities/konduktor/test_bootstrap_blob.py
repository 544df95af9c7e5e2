"""``konduktor.bootstrap`` against the enrollment lab: the blob lives in a 0700 directory as a 0600 file only
while the step runs, is removed whatever happens, and appears in no error message."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.settings import settings
from tenantflow.activities.hub.konduktor import bootstrap, remove_blob
from tenantflow.models.enrollment_workflows import EnrollmentStep
from tests.enrollment.conftest import Lab, start_lab


@pytest.fixture
def greenfield(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=False)


def spy(lab: Lab, behaviour: str) -> Path:
    """A konduktor wrapper that, on ``worker bootstrap`` (not its ``--help``), records the modes of the blob's
    directory and file, the argument after ``bootstrap`` and the blob read from the file named next (for the test to
    look for), and then ``behaviour`` (``run`` the stand-in, or ``fail``)."""
    real = os.environ["KONDUKTOR_BIN"]
    script = lab.tmp.parent / f"spy-{behaviour}"
    record = lab.tmp.parent / "seen"
    script.write_text(f"""#!/bin/bash
if [[ "$6" == bootstrap && "$7" != --help ]]; then
  for d in "{lab.tmp}"/konduktor-bootstrap.*; do
    stat -c '%a' "$d" > "{record}"; stat -c '%a' "$d"/bootstrap.* >> "{record}"
  done
  echo "$7" >> "{record}"; cat "$8" >> "{record}"
  [[ "{behaviour}" == fail ]] && {{ echo "cannot reach the worker with blob $(cat "$8")" >&2; exit 3; }}
fi
exec "{real}" "$@"
""")
    script.chmod(0o755)
    os.environ["KONDUKTOR_BIN"] = str(script)
    settings.cache_clear()
    return record


async def test_the_blob_is_private_while_it_exists_and_gone_after(greenfield: Lab) -> None:
    record = spy(greenfield, "run")
    created = await ActivityEnvironment().run(bootstrap, EnrollmentStep(contract=greenfield.contract()))
    assert {r.name for r in created} >= {"trainy-worker-agent", "trainy-system", "trainy-bootstrap"}
    directory_mode, file_mode, flag, blob = record.read_text().split()
    assert (directory_mode, file_mode) == ("700", "600")
    assert flag == "--blob-file", "the blob is passed as a file, never as an argument"
    assert blob.startswith("kdk1.")
    assert not list(greenfield.tmp.glob("konduktor-bootstrap.*"))


async def test_a_failing_bootstrap_removes_the_blob_and_never_names_it(greenfield: Lab) -> None:
    record = spy(greenfield, "fail")
    with pytest.raises(ApplicationError) as info:
        await ActivityEnvironment().run(bootstrap, EnrollmentStep(contract=greenfield.contract()))
    blob = record.read_text().split()[3]
    assert info.value.type == "KonduktorFailed" and info.value.non_retryable
    assert blob not in str(info.value) and konduktor_cli.REDACTED in str(info.value)
    assert "exited 3" in str(info.value)
    assert not list(greenfield.tmp.glob("konduktor-bootstrap.*"))


def test_removal_falls_back_to_unlink_without_shred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    secret = tmp_path / "konduktor-bootstrap.x" / "bootstrap.y.txt"
    secret.parent.mkdir()
    secret.write_text("kdk1.secret")
    remove_blob(secret)
    assert not secret.parent.exists()


async def test_a_blob_left_by_a_killed_attempt_is_removed_by_the_next(greenfield: Lab) -> None:
    left = greenfield.tmp / "konduktor-bootstrap.forecasting.forecasting-us.killed" / "bootstrap.x.txt"
    left.parent.mkdir()
    left.write_text("kdk1.from-a-killed-attempt")
    other = greenfield.tmp / "konduktor-bootstrap.forecasting.another-worker.running" / "bootstrap.y.txt"
    other.parent.mkdir()
    other.write_text("kdk1.in-use")
    await ActivityEnvironment().run(bootstrap, EnrollmentStep(contract=greenfield.contract()))
    assert not left.parent.exists()
    assert other.exists(), "another worker's enrollment is not touched"
