"""A deliberately non-deterministic change to a workflow fails replay of the recorded histories.

Each class of unversioned change is tried against the histories of the paths it
touches (completed runs, rollbacks, cancels, expiries, teardown, decommission):
adding a command (an activity, a timer), removing one (a step, a gate's timer),
reordering them (the rollback order, cordon and drain), and changing what an
activity is given (caught by the strict replay of tests/histories/strict_replay.py,
since Temporal's own replay does not compare activity inputs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.workflow import NondeterminismError

from tests.histories.changed_workflows import (
    DecommissionRemovingFirst,
    EnrollmentWithOtherBudget,
    EnrollmentWithTimer,
    LifecycleNotAnnouncingRenewals,
    LifecycleNotNotifyingWaitingRenewals,
    LifecycleOffboardingTheHeldContract,
    LifecycleWithOtherNotices,
    OffboardingLeavingJobs,
    OffboardingWithExtraStep,
    OffboardingWithoutPurgeGate,
    OnboardingWithExtraStep,
    OnboardingWithOtherRunId,
    OnboardingWithoutAdoptions,
    OnboardingWithoutAPreflight,
    OnboardingWithoutGateNotifications,
    OnboardingWithoutSmokeGate,
    OnboardingWithReversedRollback,
    OnboardingWithUnguardedGateNotifications,
    OnboardingWithUnguardedSmokeGate,
)
from tests.histories.strict_replay import ArgumentsChanged, replay_strictly

HISTORIES = Path(__file__).parent


RENEWALS = ("lifecycle-renewed", "lifecycle-renew-gated", "lifecycle-renewal-notified")
ROLLBACKS = (
    "onboarding-rolledback",
    "onboarding-cancelled",
    "onboarding-rollback-retried",
    "onboarding-rollback-incomplete",
)
REPLAN_PREFLIGHTS = ("onboarding-replan-preflighted", "onboarding-replan-refused")
"""Runs whose re-plan after approval ran preflight too (patch ``replan-preflights``; lean-history runs)."""
TODAY = (
    "onboarding-lean-completed",
    "onboarding-lean-rolledback",
    "onboarding-lean-replanned",
    "onboarding-lean-refused",
)
"""Plain runs of today's code, every patch their path checks (``record_today.py``); all but the last open a gate."""
GATE_NOTIFIED = ("onboarding-gate-notified-local",)
"""Runs that notified at their gates (patch ``gate-notifications-local``): opened, escalated, deadline."""
SMOKE_GATED = ("onboarding-smoke-rerun",)
"""Runs that waited at ``smoke_failed`` (patch ``smoke-failed-gate``)."""
SMOKE_ROLLED_BACK = ("onboarding-smoke-rolledback", "onboarding-smoke-step-rolledback")
"""Runs recorded before that patch whose smoke check failed (an error finding; the step's activity) and rolled back."""
ENROLLMENTS = (
    "enrollment-greenfield",
    "enrollment-brownfield",
    "enrollment-brownfield-cordon-beside",
    "enrollment-cancelled",
    "enrollment-compensation-incomplete",
    "enrollment-resume-expired",
    "enrollment-replanned",
    "enrollment-rollback-retried",
    "enrollment-bootstrap-plan-gate",
)
CHANGES: list[tuple[str, type, type[Exception]]] = [
    *[
        (name, OnboardingWithExtraStep, NondeterminismError)
        for name in (
            "onboarding-completed",
            "onboarding-lifecycle",
            "onboarding-hold-completed",
            *ROLLBACKS,
            *REPLAN_PREFLIGHTS,
            *SMOKE_GATED,
            *GATE_NOTIFIED,
            *TODAY,
        )
    ],
    *[(name, EnrollmentWithTimer, NondeterminismError) for name in ENROLLMENTS],
    *[
        (name, OffboardingWithExtraStep, NondeterminismError)
        for name in (
            "offboarding-purged",
            "offboarding-replanned",
            "offboarding-ends-term",
            "offboarding-cancels-jobs",
            "offboarding-hold-refused",
        )
    ],
    ("offboarding-cancels-jobs", OffboardingLeavingJobs, NondeterminismError),
    *[
        (name, OnboardingWithoutAPreflight, NondeterminismError)
        for name in (
            "onboarding-completed",
            "onboarding-hold-completed",
            "onboarding-replanned",
            *ROLLBACKS,
            *REPLAN_PREFLIGHTS,
            *TODAY,
        )
    ],
    ("offboarding-purged", OffboardingWithoutPurgeGate, NondeterminismError),
    *[(name, OnboardingWithoutSmokeGate, NondeterminismError) for name in SMOKE_GATED],
    *[(name, OnboardingWithUnguardedSmokeGate, NondeterminismError) for name in SMOKE_ROLLED_BACK],
    *[
        (name, OnboardingWithUnguardedGateNotifications, NondeterminismError)
        for name in ("onboarding-completed", "onboarding-gate-timeout", *REPLAN_PREFLIGHTS, *SMOKE_GATED)
    ],
    *[(name, OnboardingWithoutGateNotifications, NondeterminismError) for name in (*GATE_NOTIFIED, *TODAY[:3])],
    *[
        (name, OnboardingWithReversedRollback, NondeterminismError)
        for name in (*ROLLBACKS, *SMOKE_ROLLED_BACK, "onboarding-lean-rolledback")
    ],
    *[
        (name, DecommissionRemovingFirst, NondeterminismError)
        for name in ("decommission-completed", "decommission-gated", "decommission-reset-reapproved")
    ],
    *[(name, OnboardingWithOtherRunId, ArgumentsChanged) for name in ("onboarding-completed", *ROLLBACKS)],
    ("onboarding-adopted", OnboardingWithoutAdoptions, ArgumentsChanged),
    ("onboarding-adopted", OnboardingWithExtraStep, NondeterminismError),
    *[
        (name, EnrollmentWithOtherBudget, ArgumentsChanged)
        for name in ENROLLMENTS
        if name not in ("enrollment-compensation-incomplete", "enrollment-rollback-retried")
    ],  # no condition wait
    *[(name, LifecycleNotAnnouncingRenewals, NondeterminismError) for name in RENEWALS],
    ("lifecycle-renewal-notified", LifecycleNotNotifyingWaitingRenewals, NondeterminismError),
    *[
        (name, LifecycleWithOtherNotices, ArgumentsChanged)
        for name in (*RENEWALS, "lifecycle-expired", "lifecycle-expired-latest-record")
    ],
    ("lifecycle-expired-latest-record", LifecycleOffboardingTheHeldContract, NondeterminismError),
]


@pytest.mark.parametrize(
    ("name", "variant", "error"), CHANGES, ids=[f"{name}-{variant.__name__}" for name, variant, _ in CHANGES]
)
async def test_each_class_of_unversioned_change_fails_replay(name: str, variant: type, error: type[Exception]) -> None:
    with pytest.raises(error):
        await replay_strictly(HISTORIES / f"{name}.json", [variant])
