"""The README's "Using it" block, run as written with bash against the session's lab and Temporal dev server.

Issue 27 asks that the block run without error, top to bottom, in a fresh shell at the repository root after
``./run.sh demo``. Starting a lab and a dev server of its own (a second demo) would cost minutes of the suite's budget,
so the block runs in a temporary folder laid out as the demo leaves a clone:

- ``.venv`` and ``examples`` are links to this checkout's (the block calls ``.venv/bin/tenantflow`` and reads the
  example contracts);
- ``.state/lab`` is a link to the session lab's folder, which is up: ``lab up --state-dir .state/lab`` returns the
  running lab, as after the demo (``lab.supervisor.up`` is idempotent);
- ``.state/temporal/temporal.pid`` holds the pid of the session's dev server, so ``dev-server --state-dir
  .state/temporal`` finds its server running and returns, as after the demo (``DevServer.start`` is idempotent by
  its pid file). The shell's ``TEMPORAL_ADDRESS`` points the worker and the CLI at that server (the demo's is on
  the default :7233) and ``TENANTFLOW_TASK_QUEUE`` gives the block's worker a queue of its own;
- ``.state/approvals`` is made as the demo makes it (:class:`StandInOperators`, ``demo-requester`` and
  ``demo-approver``).

The test checks that both lines were no-ops there (the lab's processes and the pid file unchanged, no database
written under ``.state/temporal``). The shell's environment is otherwise a fresh one (``PATH``, ``HOME``): nothing of
the lab or of the test session's approvers leaks in, so the block's exports are what configures it.

The block runs as one bash script with ``set -e``, an ``ERR`` trap naming the README line that failed; its own last
line stops the worker it started (a process of the shell's group still running once the worker has had time to
drain fails the test), and the test ends the shell's process group whatever happened (SIGTERM, time to drain, then
SIGKILL: :func:`end_group`). The block onboards, changes, renews and offboards (with its data) ``tenant-foo``, so the
lab is left as found but for the deactivated user records an offboarding keeps (the runbook's), which the world
snapshot diff must be limited to; a block that fails midway leaves tenant-foo's runs terminated and the tenant
offboarded (:func:`clear_tenant_foo`), for the other tests of the lab that onboard it. The README's worker-cluster
block is not run: it runs once per lab (the README says why), and the session lab is shared with
``tests/integration/test_enrollment_e2e.py``. :func:`test_a_broken_line_is_named` shows that a failing line fails the
run, named.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.starter.approvers import StandInOperators
from tenantflow.starter.contracts import load_tenant
from tenantflow.starter.demo import APPROVER, REQUESTER
from tests.integration.runs import clear_tenant
from tests.integration.world import describe_diff, diff, world_snapshot
from tests.labfixture import lab_worker

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SECTION = "## Using it"
EXAMPLE_USERS = ("alice", "bob", "carol")
"""examples/tenant-foo.yaml's users: offboarding keeps their deactivated records."""
BLOCK_TIMEOUT_S = 840
FAILED = "README-BLOCK-FAILED"
WORKER_STOP_S = 45.0
"""How long a worker the block stopped may take to exit: it drains its tasks (the SDK waits up to 30 s)."""
CLEAR_S = 300.0
"""How long clearing tenant-foo after a failed block may take (an offboarding with its data purged)."""


@dataclass(frozen=True)
class Block:
    first_line: int
    """The README line number of the block's first line."""
    lines: list[str]

    def line(self, number: int) -> str:
        return self.lines[number - self.first_line]


def using_it_block(text: str) -> Block:
    """The first ```bash block of the README's "Using it" section."""
    lines = text.splitlines()
    section = lines.index(SECTION)
    opening = next(i for i in range(section, len(lines)) if lines[i] == "```bash")
    closing = next(i for i in range(opening + 1, len(lines)) if lines[i] == "```")
    return Block(opening + 2, lines[opening + 1 : closing])


def script(block: Block) -> str:
    """The block as a bash script that stops at the first failing command and prints its README line number."""
    header = [
        "set -eE -o pipefail",
        f"trap 'echo \"{FAILED} $((LINENO + OFFSET)) exit $?\" >&2' ERR",
    ]
    offset = block.first_line - len(header) - 1
    header[1] = header[1].replace("OFFSET", str(offset))
    return "\n".join([*header, *block.lines, ""])


def run_block(
    block: Block, cwd: Path, env: dict[str, str], timeout_s: float, stop_s: float = WORKER_STOP_S
) -> subprocess.CompletedProcess[str]:
    """Run ``block`` with bash in ``cwd``; the shell and everything it started (the worker) are ended afterwards
    (:func:`end_group`, ``stop_s`` to drain). The output goes to files, not pipes: a worker left running by a failed
    block would hold a pipe open."""
    path, out, err = cwd / "using-it.sh", cwd / "using-it.out", cwd / "using-it.err"
    path.write_text(script(block))
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            ["bash", str(path)],
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        code = proc.wait(timeout=timeout_s)
        left = "" if code else still_running(proc.pid, stop_s)
        problem = f"\n{FAILED} ? the block left processes running: {left}" if left else ""
    except subprocess.TimeoutExpired:
        code, problem = -1, f"\n{FAILED} ? timed out after {timeout_s:.0f}s"
    finally:
        end_group(proc.pid, stop_s)
        proc.wait()
    return subprocess.CompletedProcess(proc.args, code, out.read_text(), err.read_text() + problem)


def group_members(pgid: int) -> list[str]:
    """The command lines of the live processes of process group ``pgid`` (from /proc)."""
    found = []
    for proc in (p for p in Path("/proc").iterdir() if p.name.isdigit()):
        try:
            state, _ppid, group = (proc / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            if int(group) == pgid and state != "Z":
                found.append((proc / "cmdline").read_text().replace("\0", " ").strip())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def still_running(pgid: int, grace_s: float = WORKER_STOP_S) -> str:
    """What the block's shell left running once it exited (its workers must have been stopped by the block); a
    stopped worker may take ``grace_s`` to drain its tasks."""
    deadline = time.monotonic() + grace_s
    while (left := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return "; ".join(left)


def end_group(pgid: int, stop_s: float) -> None:
    """End what is left of process group ``pgid``: SIGTERM, up to ``stop_s`` for it to drain (a worker still applying
    a run), then SIGKILL; the group is gone before the next test uses the lab."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        if not still_running(pgid, stop_s):
            return
    raise AssertionError(f"process group {pgid} outlived SIGKILL: {still_running(pgid, 0)}")


def failure(block: Block, done: subprocess.CompletedProcess[str]) -> str | None:
    """None when the block ran through; else which README line failed, how, and the shell's output."""
    named = re.search(rf"{FAILED} (\d+|\?) (.*)", done.stderr)
    if done.returncode == 0 and named is None:
        return None
    where = (
        f"README.md line {named[1]} failed ({named[2]}): {block.line(int(named[1])).strip()}"
        if named and named[1].isdigit()
        else f"the block failed ({named[2] if named else f'exit {done.returncode}'})"
    )
    return f"{where}\n--- stdout (tail)\n{done.stdout[-6000:]}\n--- stderr (tail)\n{done.stderr[-6000:]}"


def listening_pid(port: int) -> int:
    """The pid of the process listening on TCP ``port`` of this host (from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                inodes.add(f"socket:[{fields[9]}]")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
    raise LookupError(f"no process listens on port {port}")


def demo_clone(tmp: Path, lab: LabEndpoints, server_pid: int) -> Path:
    """A folder laid out as a clone after ``./run.sh demo`` (the module's docstring)."""
    venv = Path(sys.executable).parent.parent
    (tmp / ".venv").symlink_to(venv)
    (tmp / "examples").symlink_to(ROOT / "examples")
    state = tmp / ".state"
    state.mkdir()
    (state / "lab").symlink_to(lab.state_dir)
    (state / "temporal").mkdir()
    (state / "temporal" / "temporal.pid").write_text(str(server_pid))
    StandInOperators.make(state / "approvals", REQUESTER, APPROVER)
    return tmp


def fresh_shell(temporal_address: str, task_queue: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "TEMPORAL_ADDRESS": temporal_address,
        "TENANTFLOW_TASK_QUEUE": task_queue,
    }


async def clear_tenant_foo(client: Client, lab: LabEndpoints) -> None:
    """After a failed block, best effort: end tenant-foo's open runs on the dev server and offboard it (data purged) if
    its record says it is onboarded, for the tests of this lab that onboard it next. Never raises: a failure here is a
    warning, the block's failure is the test's."""
    contract = load_tenant(ROOT / "examples" / "tenant-foo.yaml")
    try:
        async with lab_worker(client, lab) as api:
            reason = "the README block failed; clearing tenant-foo off the lab"
            await asyncio.wait_for(clear_tenant(api, contract.cluster, contract.slug, reason), CLEAR_S)
    except Exception as exc:
        warnings.warn(f"tenant-foo may be left on the lab {lab.state_dir}: {exc!r}", stacklevel=1)


def lab_processes(lab: LabEndpoints) -> dict[str, str]:
    """The pid files of the lab's processes, by name."""
    return {p.name: p.read_text() for p in sorted(Path(lab.state_dir).rglob("*.pid"))}


@pytest.mark.timeout(BLOCK_TIMEOUT_S + 2 * WORKER_STOP_S + CLEAR_S + 60)
async def test_the_using_it_block_runs_as_written(
    dev_env: WorkflowEnvironment, lab: LabEndpoints, tmp_path: Path
) -> None:
    block = using_it_block(README.read_text())
    address = dev_env.client.service_client.config.target_host
    server_pid = listening_pid(int(address.rsplit(":", 1)[1]))
    clone = demo_clone(tmp_path, lab, server_pid)
    processes, before = lab_processes(lab), world_snapshot(lab)
    assert processes, f"no pid files under {lab.state_dir}: the lab is not up"

    shell = fresh_shell(address, f"readme-{uuid.uuid4().hex[:8]}")
    problem: str | None = "the block did not end"
    try:
        done = await asyncio.to_thread(run_block, block, clone, shell, BLOCK_TIMEOUT_S)
        problem = failure(block, done)
    finally:
        if problem is not None:
            await clear_tenant_foo(dev_env.client, lab)
    assert problem is None, problem
    assert lab_processes(lab) == processes, "lab up started or stopped a process of the running lab"
    temporal = clone / ".state" / "temporal"
    assert sorted(p.name for p in temporal.iterdir()) == ["temporal.pid"], "dev-server started a server"
    assert (temporal / "temporal.pid").read_text() == str(server_pid)
    residue = diff(before, world_snapshot(lab))
    assert all(any(user in line for user in EXAMPLE_USERS) for line in residue), describe_diff(
        before, world_snapshot(lab)
    )


def test_a_broken_line_is_named(tmp_path: Path) -> None:
    """A block whose second line fails stops there: the failure names that README line, and the third never runs."""
    block = Block(40, ["echo first", "false  # broken", "touch third"])
    done = run_block(block, tmp_path, {"PATH": os.environ["PATH"]}, 30)
    problem = failure(block, done)
    assert problem is not None
    assert problem.startswith("README.md line 41 failed (exit 1): false  # broken"), problem
    assert not (tmp_path / "third").exists()


def test_a_process_that_outlives_sigterm_is_killed(tmp_path: Path) -> None:
    """A failed block's process that ignores SIGTERM (a worker that does not drain) is killed before the run ends."""
    block = Block(1, ["echo $$ > group", "(trap '' TERM; exec sleep 120) &", "false"])
    done = run_block(block, tmp_path, {"PATH": os.environ["PATH"]}, 30, stop_s=2)
    assert failure(block, done) is not None
    assert group_members(int((tmp_path / "group").read_text())) == []
