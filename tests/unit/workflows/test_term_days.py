"""The lifecycle's day arithmetic: whole days left rounded up, and which reminders a (renewed) term skips."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tenantflow.models.lifecycle import renew_days_problem
from tenantflow.workflows.term_notices import days_left, past_reminders

END = datetime(2027, 12, 3, 12, tzinfo=UTC)


def test_days_left_rounds_up_and_stops_at_zero() -> None:
    assert days_left(END, END - timedelta(days=7)) == 7
    assert days_left(END, END - timedelta(days=6, hours=1)) == 7
    assert days_left(END, END) == 0
    assert days_left(END, END + timedelta(days=2)) == 0


def test_reminders_already_due_are_skipped() -> None:
    assert past_reminders(END, [30, 7, 1], END - timedelta(days=10)) == [30]
    assert past_reminders(END, [30, 7, 1], END - timedelta(days=7)) == [30, 7]
    assert past_reminders(END, [30, 7, 1], END - timedelta(days=40)) == []


def test_renew_days_outside_one_to_3650_say_why() -> None:
    assert renew_days_problem(1) is None and renew_days_problem(3650) is None
    for days in (0, -3, 3651):
        problem = renew_days_problem(days)
        assert problem is not None and problem.startswith(f"days={days}:")
