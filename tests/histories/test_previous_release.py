"""The previous release's bad-input run replays with today's code, so it can still be queried (issue 26, item 10).

The previous release is 6408cad, the commit before d06ca5d, where every tenant workflow began with ``Gates.label``:
its check of the ``stage-upsert-on-change`` patch (a marker and a ``TemporalChangeVersion`` upsert) moved ahead of the
``TenantSlug`` upsert. ``onboarding-refused-6408cad.json`` is an onboarding that 6408cad's own code ran
(``record_previous.py``) and its preflight refused (bad input: 64 GPUs wanted, 8 free): ``TenantSlug`` upserted, then
the patch marker, ``Stage``, the preflight reads, ``Stage=preflight-failed`` and the failure. A query on such a run
(``tenantflow status``) replays it on today's worker; today's onboarding does so when it has no lean-history marker.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.workflow import NondeterminismError

from tenantflow.worker.registry import WORKFLOWS
from tests.chaos.kit import STATS
from tests.histories.changed_workflows import OnboardingLabellingFirst
from tests.histories.strict_replay import load, replay_strictly

PREVIOUS = Path(__file__).parent / "onboarding-refused-6408cad.json"


def test_the_history_is_a_refused_run_of_the_previous_release() -> None:
    events = load(PREVIOUS).events
    failure = events[-1].workflow_execution_failed_event_attributes.failure
    assert failure.application_failure_info.type == "PreflightFailed", failure
    assert events[4].HasField("upsert_workflow_search_attributes_event_attributes"), "TenantSlug first"
    assert events[5].marker_recorded_event_attributes.marker_name == "core_patch", "then the stage patch"


async def test_the_previous_release_refused_run_replays() -> None:
    line = STATS.scenario("previous release's bad-input history (6408cad)")
    await replay_strictly(PREVIOUS, WORKFLOWS)
    line.outcome = "replays"


async def test_checking_the_patch_before_the_slug_fails_its_replay() -> None:
    """What a query on that run met after the upgrade: the label's patch check ahead of the recorded upsert."""
    with pytest.raises(NondeterminismError, match="stage-upsert-on-change"):
        await replay_strictly(PREVIOUS, [OnboardingLabellingFirst])
