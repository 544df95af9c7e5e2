"""A program ended by :func:`worker.program.run_program` exits with its own code, its output flushed and no
interpreter finalization (no ``atexit`` handler runs: finalization is where the Temporal SDK's native threads can
abort a finished process); ``python -m tenantflow.worker`` ends that way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.worker.test_main import refused_address, worker_env

PROGRAM = """
import atexit, logging, sys
from tenantflow.worker.program import run_program
atexit.register(lambda: print("finalized", flush=True))
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(message)s")

def main():
    print("working", end="")
    logging.getLogger("x").info("logged")
    {ending}

run_program(main)
"""


def run(ending: str) -> subprocess.CompletedProcess[str]:
    source = PROGRAM.format(ending=ending)
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)


def test_a_program_exits_with_its_code_with_output_flushed_and_no_finalization() -> None:
    for ending, code, message in (
        ("return None", 0, ""),
        ("sys.exit(3)", 3, ""),
        ("sys.exit('bad input: field x')", 1, "bad input: field x"),
        ("raise RuntimeError('boom')", 1, "RuntimeError: boom"),
    ):
        done = run(ending)
        assert done.returncode == code, (ending, done)
        assert done.stdout == "working", "stdout is flushed and no atexit handler ran"
        assert "logged" in done.stderr and message in done.stderr, (ending, done.stderr)


def test_python_m_worker_ends_through_run_program(tmp_path: Path) -> None:
    env = worker_env(tmp_path, TEMPORAL_ADDRESS=refused_address())
    done = subprocess.run(
        [sys.executable, "-m", "tenantflow.worker"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done
    assert "TEMPORAL_ADDRESS: no Temporal server answers there" in done.stderr
    assert "Traceback" not in done.stderr
