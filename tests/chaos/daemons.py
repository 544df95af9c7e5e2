"""Chaos at the daemons: stop or SIGKILL the chaos lab's real slapd, slurmdbd and slurmctld and start them again,
hang one (SIGSTOP) and let it go on, SIGKILL the Temporal dev server, and wait on what Temporal says about an
activity in flight.

A lab daemon is found by its pid file (:func:`lab.daemons.process.recorded`) and restarted with the argv and
environment it ran with, read from ``/proc`` before it goes; one that ran in a mount namespace of its own
(slurmctld, :func:`lab.daemons.host_users.in_lab_namespace`) starts in a new lab namespace again. It keeps its
place in the lab's stop order (its pid file keeps the old sequence), so ``lab down`` stops it as before.

An attempt in flight is read from the server (``DescribeWorkflowExecution``'s pending activities: state,
attempt, last failure), so a test acts when a step's attempt has started or has failed on the fault it made,
not after a sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.client import WorkflowHandle

from tenantflow.lab.daemons.host_users import in_lab_namespace
from tenantflow.lab.daemons.process import (
    Daemon,
    command_succeeds,
    is_running,
    pids_dir,
    port_open,
    recorded,
    start_daemon,
    stop,
)
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.starter.devserver import DevServer
from tests.chaos.kit import STATS

Pending = PendingActivityInfo


@dataclass
class DownDaemon:
    """A lab daemon that was stopped or killed, and how to start it again."""

    state_dir: Path
    daemon: Daemon
    argv: list[str]
    env: dict[str, str]
    namespaced: bool
    ready: Callable[[], bool]
    up: bool = False

    def start(self) -> None:
        """Start it as it ran (once), wait for ``ready``, and give its pid file the old place in the stop order."""
        if self.up:
            return
        argv = in_lab_namespace(self.state_dir, self.argv) if self.namespaced else self.argv
        new = start_daemon(self.state_dir, self.daemon.name, argv, self.ready, env=self.env, timeout=60)
        pid_file = pids_dir(self.state_dir) / f"{new.name}.pid"
        pid_file.write_text(f"{new.pid} {new.start_time} {self.daemon.sequence}\n")
        self.up = True


@contextlib.contextmanager
def outage(lab: LabEndpoints, name: str, *, kill: bool, ready: Callable[[], bool]) -> Iterator[DownDaemon]:
    """Stop the lab daemon ``name`` (SIGTERM, as an operator would) or SIGKILL it (a crash) for the block, which
    starts it again with :meth:`DownDaemon.start`; if the block fails first, it is started on the way out."""
    daemon = next(d for d in recorded(lab.state_dir) if d.name == name)
    proc = Path(f"/proc/{daemon.pid}")
    argv = (proc / "cmdline").read_bytes().decode().rstrip("\0").split("\0")
    env = dict(item.split("=", 1) for item in (proc / "environ").read_bytes().decode().split("\0") if "=" in item)
    namespaced = os.readlink(proc / "ns" / "mnt") != os.readlink("/proc/self/ns/mnt")
    if kill:
        os.kill(daemon.pid, signal.SIGKILL)
        while is_running(daemon):
            time.sleep(0.02)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(daemon.pid, os.WNOHANG)
    else:
        stop(daemon)
    down = DownDaemon(lab.state_dir, daemon, argv, env, namespaced, ready)
    try:
        yield down
    finally:
        down.start()


@contextlib.contextmanager
def hung(lab: LabEndpoints, name: str) -> Iterator[Callable[[], None]]:
    """SIGSTOP the lab daemon ``name`` for the block: its sockets stay open, so a client connects, sends and waits
    for an answer (a hung slurmdbd, not a dead one). The block gets the SIGCONT that lets it go on, which is
    also sent on the way out; what it was sent meanwhile it then serves."""
    daemon = next(d for d in recorded(lab.state_dir) if d.name == name)
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        yield lambda: os.kill(daemon.pid, signal.SIGCONT)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)


def slapd_ready(lab: LabEndpoints) -> Callable[[], bool]:
    return port_open(urlsplit(lab.ldap_url).port or 389)


def slurm_ready(lab: LabEndpoints, *argv: str) -> Callable[[], bool]:
    """``sacctmgr show cluster`` (slurmdbd) or ``scontrol ping`` (slurmctld) answers."""
    return command_succeeds(list(argv), {**os.environ, "SLURM_CONF": str(lab.slurm_conf)})


def kill_server(server: DevServer) -> None:
    """SIGKILL the dev server's process group (no shutdown, whatever it had not written is gone) and start it
    again on the same SQLite file."""
    pid = server.running_pid()
    assert pid is not None, "the dev server is not running"
    os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    server.pid_file.unlink()
    server.start(headless=True)
    STATS.server_restarts += 1


async def pending(handle: WorkflowHandle[Any, Any], activity: Callable[[str], bool]) -> Pending | None:
    """The run's pending activity whose type ``activity`` accepts, if any."""
    described = await handle.describe()
    return next(
        (p for p in described.raw_description.pending_activities if activity(p.activity_type.name)),
        None,
    )


async def wait_pending(
    handle: WorkflowHandle[Any, Any],
    activity: Callable[[str], bool],
    ready: Callable[[Pending], bool],
    what: str,
    timeout_s: float = 150,
) -> Pending:
    """Poll the server until a pending activity of the accepted type is ``ready``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        found = await pending(handle, activity)
        if found is not None and ready(found):
            return found
        assert asyncio.get_running_loop().time() < deadline, f"never saw {what}; last pending: {found}"
        await asyncio.sleep(0.05)


def named(name: str) -> Callable[[str], bool]:
    return lambda activity: activity == name


def started(info: Pending) -> bool:
    """An attempt is running on a worker."""
    return info.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


def failed_unavailable(info: Pending) -> bool:
    """The last attempt failed as ``Unavailable`` (a dependency that cannot be reached; retried)."""
    return info.last_failure.application_failure_info.type == "Unavailable"
