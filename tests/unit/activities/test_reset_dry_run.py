"""What tenantflow reads from ``konduktor worker reset`` output as actions (a summary beside the verbatim text): the
stand-in's runbook lines and its table, and nothing at all from lines that name no action on an object."""

from __future__ import annotations

import pytest

from tenantflow.activities.workercluster.steps import reset_plan_steps
from tenantflow.lab.konduktor.worker_commands import Entry, runbook_lines, table_lines

ENTRIES: list[Entry] = [
    ("delete", "Deployment", "trainy-system", "trainy-worker-agent", ""),
    ("delete", "Namespace", None, "trainy-system", ""),
    ("release", "LocalQueue", "forecasting", "user-queue", ""),
    ("release", "ClusterQueue", None, "cluster-queue", ""),
    ("leave", "Deployment", "kueue-system", "kueue-controller-manager", "Kueue"),
]
ACTIONS = {"delete": "delete", "release": "update", "leave": "leave"}


@pytest.mark.parametrize(
    "lines",
    [[*runbook_lines(ENTRIES), "dry run: nothing was changed"], table_lines(ENTRIES, dry_run=True)],
    ids=["runbook", "table"],
)
def test_each_object_of_either_format_is_read(lines: list[str]) -> None:
    read = [(s.action, s.kind, s.namespace, s.name) for s in reset_plan_steps(lines)]
    assert read == [(ACTIONS[action], kind, ns, name) for action, kind, ns, name, _ in ENTRIES]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "dry run: nothing was changed",
        "Would reset the worker.\nDelete all Trainy components? Use --yes.",
        "ACTION   KIND   NAMESPACE   NAME\n0 to delete, 0 to release, 0 kept. Nothing was changed.",
        '{"delete": [{"kind": "Deployment", "name": "trainy-worker-agent"}]}',
    ],
)
def test_lines_that_name_no_action_on_an_object_read_as_nothing(text: str) -> None:
    assert reset_plan_steps(text.split("\n")) == []
