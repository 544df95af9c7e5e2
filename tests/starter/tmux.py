"""A real terminal for CLI tests: a detached tmux session of a given size, its screen and scrollback."""

from __future__ import annotations

import asyncio
import re
import shlex
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from tenantflow.starter.client import TenantflowClient
from tests.starter.conftest import CLI, cli_env


async def tmux(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        "tmux", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


@asynccontextmanager
async def terminal(columns: int, rows: int = 50) -> AsyncIterator[str]:
    """A detached tmux session ``columns`` wide, killed afterwards; yields its name."""
    session = f"tf-{uuid.uuid4().hex[:8]}"
    await tmux("new-session", "-d", "-s", session, "-x", str(columns), "-y", str(rows))
    try:
        yield session
    finally:
        await tmux("kill-session", "-t", session)


async def run_cli(session: str, api: TenantflowClient, command: str, extra_env: dict[str, str] | None = None) -> None:
    """Type ``tenantflow COMMAND; echo EXIT=$?`` into the session, pointed at ``api``'s server and task queue."""
    env = {key: cli_env(api)[key] for key in ("TEMPORAL_ADDRESS", "TENANTFLOW_TASK_QUEUE")} | (extra_env or {})
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    await tmux("send-keys", "-t", session, f"env {exports} {CLI} {command}; echo EXIT=$?", "Enter")


async def _poll(session: str, found: Callable[[str], bool], timeout_s: float, history: bool, what: str) -> str:
    """The session's screen (with ``history``, all its scrollback) once ``found`` accepts it."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        screen = await tmux("capture-pane", "-p", "-t", session, *(("-S", "-") if history else ()))
        if found(screen):
            return screen
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} within {timeout_s}s:\n{screen}")
        await asyncio.sleep(0.3)


async def screen_until(session: str, wanted: list[str], timeout_s: float = 60) -> str:
    """The session's screen once it shows every text in ``wanted``."""
    return await _poll(
        session,
        lambda screen: all(text in screen for text in wanted),
        timeout_s,
        False,
        f"never saw {wanted} on screen",
    )


EXITED = re.compile(r"^EXIT=(\d+)$", re.MULTILINE)


async def exit_code(session: str, timeout_s: float = 120) -> tuple[int, str]:
    """The exit code :func:`run_cli` echoes once the command ends, and the whole scrollback."""
    screen = await _poll(
        session, lambda screen: EXITED.search(screen) is not None, timeout_s, True, "the command did not end"
    )
    ended = EXITED.search(screen)
    assert ended is not None
    return int(ended.group(1)), screen
