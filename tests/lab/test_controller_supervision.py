"""A lab controller or sidecar that dies is never silent: logged with its reason, restarted, then lab serve stops."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import pytest

from tenantflow.lab import serve
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers.slurm import watch
from tenantflow.lab.daemons.process import PORT_CLAIMS, free_port


def context(tmp_path: Path) -> LabContext:
    return LabContext(state_dir=tmp_path, stores={})


async def test_a_dying_controller_is_logged_restarted_and_then_stops_lab_serve(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runs: list[int] = []

    async def broken(ctx: LabContext) -> None:
        runs.append(len(runs))
        raise OSError(f"cannot reach slapd (run {len(runs)})")

    with pytest.raises(serve.ControllerDied, match="died 3 times") as died:
        await serve.supervised(broken, context(tmp_path), restarts=2)
    assert runs == [0, 1, 2]
    assert broken.__module__ in str(died.value)
    died_lines = [r for r in caplog.records if r.levelno == logging.ERROR and "died" in r.getMessage()]
    assert len(died_lines) == 3 and all(r.exc_info for r in died_lines)
    assert "cannot reach slapd (run 3)" in caplog.text
    assert "restart 2 of 2" in caplog.text


async def test_a_controller_that_returns_is_restarted_like_one_that_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runs: list[int] = []
    forever = asyncio.Event()

    async def returns_once(ctx: LabContext) -> None:
        runs.append(1)
        if len(runs) > 1:
            await forever.wait()

    task = asyncio.create_task(serve.supervised(returns_once, context(tmp_path)))
    while len(runs) < 2:
        await asyncio.sleep(0.05)
    assert not task.done()
    assert "returned; it must run as long as the lab" in caplog.text
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_lab_serve_waits_for_stop_unless_a_controller_gives_up() -> None:
    stop = asyncio.Event()

    async def gives_up() -> None:
        raise serve.ControllerDied("controller x died 6 times")

    with pytest.raises(serve.ControllerDied, match="controller x died"):
        await serve.until_stopped_or_failed(stop, [asyncio.create_task(gives_up())])

    running = asyncio.create_task(asyncio.Event().wait())
    stop.set()
    await serve.until_stopped_or_failed(stop, [running])
    assert not running.done()
    running.cancel()


async def test_a_sidecar_that_dies_ends_the_slurm_controller_with_its_error() -> None:
    async def sync_loop() -> None:
        raise PermissionError("/etc/nsswitch.conf: read-only")

    async def mounts_loop() -> None:
        await asyncio.Event().wait()

    mounts = asyncio.create_task(mounts_loop(), name="weka-mounts")
    with pytest.raises(PermissionError, match="nsswitch"):
        await watch([asyncio.create_task(sync_loop(), name="host-users"), mounts])
    mounts.cancel()

    async def returns() -> None:
        return None

    with pytest.raises(RuntimeError, match="sidecar host-users stopped"):
        await watch([asyncio.create_task(returns(), name="host-users")])


def test_free_ports_are_below_the_ephemeral_range_claimed_and_bindable() -> None:
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == len(ports)
    assert all(port < first_ephemeral for port in ports)
    assert all((PORT_CLAIMS / str(port)).exists() for port in ports)
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
