"""Unversioned edits of the paths runs started today take fail replay of those paths' histories (issue 26, item 10).

Runs with the patch ``onboarding-lean-history`` (every onboarding started since) run their read-only steps as local
activities, recorded as markers; runs recorded before it never reach that code. So an extra local read on the lean
path replays green against every history recorded before the patch, and only histories of lean runs catch it:
``onboarding-lean-*`` (``record_today.py``), the plain runs of today's code, and the earlier lean ones. A lifecycle
started today checks ``renewal-gate-notifications`` first and, when it has no parent (bad input), refuses to run
(``lifecycle-parentless``); ``lifecycle-expired-notifying`` is today's expiry. ``change-gate-notified`` is a
change as one started today runs it (``record_change.py``), ``enrollment-gate-notified`` such an enrollment.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.workflow import NondeterminismError

from tests.chaos.kit import STATS
from tests.histories.changed_workflows import (
    ChangeReadingOnceMore,
    EnrollmentWithOtherBudget,
    EnrollmentWithTimer,
    LifecycleOffboardingTheHeldContract,
    LifecycleWithOtherNotices,
    LifecycleWithoutParentCheck,
    OnboardingWithExtraLocalRead,
)
from tests.histories.strict_replay import ArgumentsChanged, patch_ids, replay_strictly
from tests.histories.test_nondeterminism import TODAY

HISTORIES = Path(__file__).parent
ONBOARDINGS = sorted(HISTORIES.glob("onboarding-*.json"))
LEAN = [path.stem for path in ONBOARDINGS if "onboarding-lean-history" in patch_ids(path)]
BEFORE_LEAN = [path.stem for path in ONBOARDINGS if path.stem not in LEAN]


def test_todays_plain_runs_are_lean() -> None:
    assert set(TODAY) <= set(LEAN), LEAN


async def test_an_extra_local_read_fails_replay_of_every_lean_run() -> None:
    """Issue 26's variant, with its line in the chaos summary: it fails the replay of each lean history."""
    line = STATS.scenario("unversioned local read on today's onboarding path")
    for name in LEAN:
        with pytest.raises(NondeterminismError):
            await replay_strictly(HISTORIES / f"{name}.json", [OnboardingWithExtraLocalRead])
    line.outcome = f"fails {len(LEAN)} lean replays"


@pytest.mark.parametrize("name", BEFORE_LEAN)
async def test_runs_recorded_before_the_lean_path_never_reach_it(name: str) -> None:
    """Why the lean histories are needed: without them the edit above replays green."""
    await replay_strictly(HISTORIES / f"{name}.json", [OnboardingWithExtraLocalRead])


TODAYS_CHANGES: list[tuple[str, type, type[Exception]]] = [
    *[(name, ChangeReadingOnceMore, NondeterminismError) for name in ("change-completed", "change-gate-notified")],
    ("enrollment-gate-notified", EnrollmentWithTimer, NondeterminismError),
    ("enrollment-gate-notified", EnrollmentWithOtherBudget, ArgumentsChanged),
    ("lifecycle-expired-notifying", LifecycleWithOtherNotices, ArgumentsChanged),
    ("lifecycle-expired-notifying", LifecycleOffboardingTheHeldContract, NondeterminismError),
    ("lifecycle-parentless", LifecycleWithoutParentCheck, NondeterminismError),
]


@pytest.mark.parametrize(
    ("name", "variant", "error"),
    TODAYS_CHANGES,
    ids=[f"{name}-{variant.__name__}" for name, variant, _ in TODAYS_CHANGES],
)
async def test_an_unversioned_change_fails_replay_of_todays_runs(
    name: str, variant: type, error: type[Exception]
) -> None:
    with pytest.raises(error):
        await replay_strictly(HISTORIES / f"{name}.json", [variant])
