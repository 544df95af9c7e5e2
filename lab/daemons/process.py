"""Run real daemons in the background with all their state in one folder, and stop them by PID.

No systemd: each daemon runs in the foreground of its own session (``start_new_session``), with
stdout and stderr in ``<state_dir>/logs/<name>.log`` and a pid file ``<state_dir>/pids/<name>.pid``.
The pid file holds ``<pid> <start-time> <sequence>``; the start time (from ``/proc/<pid>/stat``)
guards against killing an unrelated process that reused the PID, and the sequence lets
:func:`stop_all` stop daemons in reverse start order (slurmctld before slurmdbd before MariaDB).
Ports come from :func:`free_port`, which keeps labs of concurrent test runs off each other's ports.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

LOG_TAIL_LINES = 40
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
PORT_SPAN = 12000
PORT_TRIES = 500
PORT_CLAIMS = Path(tempfile.gettempdir()) / "tenantflow-lab-ports"
PORT_CLAIM_S = 600.0
"""How long a port :func:`free_port` handed out stays claimed: longer than a lab takes to start its daemons."""


class DaemonError(RuntimeError):
    """A daemon did not become ready, or died while starting."""


@dataclass(frozen=True)
class Daemon:
    """One started daemon, as recorded in its pid file."""

    name: str
    pid: int
    start_time: int
    sequence: int
    log: Path


def logs_dir(state_dir: Path) -> Path:
    return state_dir / "logs"


def pids_dir(state_dir: Path) -> Path:
    return state_dir / "pids"


def proc_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when no such process exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def is_running(daemon: Daemon) -> bool:
    return proc_start_time(daemon.pid) == daemon.start_time


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def port_open(port: int, host: str = "127.0.0.1") -> Callable[[], bool]:
    """A readiness check: something accepts TCP connections on host:port."""

    def check() -> bool:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return True
        return False

    return check


def command_succeeds(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Callable[[], bool]:
    """A readiness check: the command exits 0 within 10 s."""

    def check() -> bool:
        try:
            result = subprocess.run(
                list(argv), env=dict(env) if env else None, capture_output=True, timeout=10, check=False
            )
        except subprocess.TimeoutExpired:
            return False
        return result.returncode == 0

    return check


def _below_ephemeral() -> range:
    """The :data:`PORT_SPAN` ports just below Linux's ephemeral range (``ip_local_port_range``)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        first = int(EPHEMERAL_RANGE.read_text().split()[0])
        return range(max(1024, first - PORT_SPAN), first)
    return range(32768 - PORT_SPAN, 32768)


def _claim(port: int) -> bool:
    """Claim ``port`` host-wide (a file named for it in :data:`PORT_CLAIMS`) unless a claim younger than
    :data:`PORT_CLAIM_S` holds it."""
    claim = PORT_CLAIMS / str(port)
    with (PORT_CLAIMS / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            if time.time() - claim.stat().st_mtime < PORT_CLAIM_S:
                return False
        claim.write_text(f"{os.getpid()}\n")
        return True


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on, for a lab daemon to listen on: below the ephemeral range, so no outgoing
    connection and no bind to port 0 (by any process) takes it before the daemon binds it, and claimed
    host-wide for :data:`PORT_CLAIM_S`, so another lab starting meanwhile (another pytest run) picks another."""
    PORT_CLAIMS.mkdir(mode=0o700, parents=True, exist_ok=True)
    candidates = _below_ephemeral()
    for port in random.sample(candidates, k=min(len(candidates), PORT_TRIES)):
        if _claim(port) and _bindable(host, port):
            return port
    raise DaemonError(f"no free port in {candidates.start}-{candidates.stop - 1} after {PORT_TRIES} tries")


def start_daemon(
    state_dir: Path,
    name: str,
    argv: Sequence[str],
    ready: Callable[[], bool],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> Daemon:
    """Start ``argv`` (which must stay in the foreground) and wait until ``ready()`` is true.

    Raises :class:`DaemonError` with the log tail when the process exits or ``timeout`` passes;
    the process is stopped in that case.
    """
    logs_dir(state_dir).mkdir(parents=True, exist_ok=True)
    pids_dir(state_dir).mkdir(parents=True, exist_ok=True)
    log = logs_dir(state_dir) / f"{name}.log"
    sequence = max((d.sequence for d in recorded(state_dir)), default=0) + 1
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=state_dir,
            start_new_session=True,
        )
    start_time = proc_start_time(proc.pid) or 0
    daemon = Daemon(name, proc.pid, start_time, sequence, log)
    (pids_dir(state_dir) / f"{name}.pid").write_text(f"{proc.pid} {start_time} {sequence}\n")
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            forget(state_dir, name)
            raise DaemonError(f"{name} exited with status {proc.returncode} while starting:\n{log_tail(log)}")
        if ready():
            return daemon
        if time.monotonic() > deadline:
            stop(daemon)
            forget(state_dir, name)
            raise DaemonError(f"{name} not ready after {timeout:.0f} s:\n{log_tail(log)}")
        time.sleep(0.05)


def recorded(state_dir: Path) -> list[Daemon]:
    """Every daemon with a pid file in ``state_dir``, in start order."""
    daemons = []
    for pid_file in pids_dir(state_dir).glob("*.pid"):
        pid, start_time, sequence = (int(x) for x in pid_file.read_text().split())
        name = pid_file.stem
        daemons.append(Daemon(name, pid, start_time, sequence, logs_dir(state_dir) / f"{name}.log"))
    return sorted(daemons, key=lambda d: d.sequence)


def forget(state_dir: Path, name: str) -> None:
    (pids_dir(state_dir) / f"{name}.pid").unlink(missing_ok=True)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(daemon: Daemon, grace: float = 10.0) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL. A no-op when the process is gone."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not is_running(daemon):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(daemon.pid)
            if not is_running(daemon):
                return
            time.sleep(0.05)
    if is_running(daemon):
        raise DaemonError(f"{daemon.name} (pid {daemon.pid}) survived SIGKILL")


def stop_all(state_dir: Path) -> list[Daemon]:
    """Stop every daemon recorded in ``state_dir``, newest first; return what was recorded."""
    daemons = recorded(state_dir) if pids_dir(state_dir).is_dir() else []
    for daemon in reversed(daemons):
        stop(daemon)
        forget(state_dir, daemon.name)
    return daemons
