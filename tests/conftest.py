"""Session-wide fixtures: the Temporal dev server, the time-skipping test server and the whole lab."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from _pytest.terminal import TerminalReporter
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tests.approvers import SessionApprovers, session_approvers
from tests.chaos.kit import STATS
from tests.labfixture import whole_lab
from tests.temporal_env import start_dev_server, start_time_skipping


@pytest.fixture(scope="session", autouse=True)
def approvers() -> SessionApprovers:
    """The session's principals and keys, their settings exported before any worker starts (tests/approvers.py)."""
    return session_approvers()


@pytest_asyncio.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_dev_server()
    yield env
    await env.shutdown()


@pytest_asyncio.fixture
async def ts_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_time_skipping()
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    """One whole lab (``lab up``) for the session; tests leave it as they found it."""
    yield from whole_lab(tmp_path_factory, "lab")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker: hand this worker's chaos figures to the controller, which prints the table."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["chaos"] = STATS.marshal()


def pytest_testnodedown(node: Any, error: object) -> None:
    """On the pytest-xdist controller: add up each worker's chaos figures as it finishes."""
    STATS.absorb(getattr(node, "workeroutput", {}).get("chaos") or {})


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    if not STATS.scenarios:
        return
    terminalreporter.section("chaos summary")
    for label, value in STATS.rows():
        terminalreporter.write_line(f"  {label:<45} {value:>5}")
    if STATS.table:
        terminalreporter.write_line("")
        terminalreporter.write_line(f"  {'scenario':<58} {'outcome':<22} lost  dup  foreign")
        for line in STATS.table:
            terminalreporter.write_line(
                f"  {line.name[:58]:<58} {line.outcome[:22]:<22} {line.lost:>4} {line.duplicated:>4} "
                f"{line.foreign_touched:>8}"
            )
    for note in STATS.notes:
        terminalreporter.write_line(f"  - {note}")


SLOWEST_FIRST = (
    "tests/security/test_big_tenant_latency.py",
    "tests/integration/test_rollback.py",
    "tests/packaging/test_install.py",
    "tests/pitfalls/test_pitfalls.py",
    "tests/integration/test_shapes_e2e.py",
    "tests/chaos/test_daemon_faults.py",
    "tests/starter/test_apply_lab.py",
    "tests/chaos/test_races.py",
    "tests/chaos/test_dependency_faults.py",
    "tests/bench/test_bench_cli.py",
    "tests/integration/test_onboarding_e2e.py",
    "tests/chaos/test_worker_crash.py",
    "tests/chaos/test_lost_responses.py",
    "tests/starter/test_drift_lab.py",
    "tests/starter/test_api_fuzz.py",
    "tests/lab/test_restart.py",
    "tests/integration/test_readme_block.py",
    "tests/records/test_after_history.py",
    "tests/chaos/test_adoption.py",
    "tests/enrollment/test_decommission_approved.py",
    "tests/security/test_secrets_scan.py",
    "tests/ui/test_approve_in_ui.py",
    "tests/chaos/test_others_objects.py",
    "tests/starter/test_commands.py",
    "tests/chaos/test_deploy.py",
    "tests/chaos/test_plain_start.py",
    "tests/enrollment/test_failure_paths.py",
)
"""Files that take a minute or more, started first so that no worker begins one while the others are finishing
(pytest-xdist hands out whole files in collection order); the rest keep their order. Longest first, by each file's
total time in the JUnit report of a whole run on two cores (``./run.sh test --junitxml=FILE``; the last nine, of
one to two minutes, by the mean of two runs), except that the files which
mostly wait (injected latency, killed daemons: test_big_tenant_latency, test_daemon_faults, test_dependency_faults
and test_worker_crash use a fifth to a third of a core) are spread between the busy ones: started together, as
plain longest-first had them, they left a core idle for minutes at the start."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(SLOWEST_FIRST)}
    root = config.rootpath
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(), len(rank)))


GC_THRESHOLDS = (7000, 20, 20)
"""The cyclic collector of each test process runs ten times less often than Python's default (700, 10, 10), with
everything collection loaded frozen out of its scans: the in-process workers allocate payloads, protos and JSON
trees by the million over a large heap, and at the default thresholds a rollback test process spent 8% more CPU."""


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
