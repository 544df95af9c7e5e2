"""API calls are attributed to the layer of the activity that made them, Slurm commands to ``slurm``."""

from __future__ import annotations

from tenantflow.bench.apicalls import LOCAL_READS, OUTSIDE, calls_per_layer
from tenantflow.bench.history import ActivitySpan

SPANS = [
    ActivitySpan(name="kube.namespace", started=10.0, ended=11.0),
    ActivitySpan(name="slurm.accounts", started=11.2, ended=12.0),
]
EXEC = "/api/v1/namespaces/slurm-control/pods/slurmctld-0/exec"


def entry(path: str, at: float) -> dict[str, object]:
    return {"method": "GET", "path": path, "query": "", "status": 200, "at": at, "injected": None}


def test_requests_go_to_the_layer_of_the_activity_running_when_they_were_served() -> None:
    entries = {
        "kube-tenant-cluster": [
            entry("/api/v1/namespaces", 5.0),
            entry("/api/v1/namespaces/x", 9.9),
            entry("/api/v1/namespaces", 10.5),
            entry(EXEC, 11.5),
            entry(EXEC, 12.05),
            entry("/api/v1/namespaces/tenant-x/pods/login-0/exec", 11.6),
        ],
        "authentik": [entry("/api/v3/core/groups/", 30.0)],
    }
    calls = calls_per_layer(entries, SPANS, since=9.0, until=13.0, slurm_namespace="slurm-control")
    assert calls == {
        OUTSIDE: {"kube-tenant-cluster": 1},
        "kube": {"kube-tenant-cluster": 1},
        "slurm": {"kube-tenant-cluster": 1, "slurm": 2},
    }


def test_requests_of_read_only_steps_run_as_local_activities_count_as_reads() -> None:
    spans = [
        ActivitySpan(name="capacity.preflight", started=10.0, ended=12.0, local=True),
        ActivitySpan(name="identity.plan", started=10.0, ended=12.0, local=True),
        ActivitySpan(name="identity.group", started=12.5, ended=13.0),
    ]
    entries = {"authentik": [entry("/api/v3/core/groups/", 11.0), entry("/api/v3/core/groups/", 12.6)]}
    calls = calls_per_layer(entries, spans, since=9.0, until=14.0, slurm_namespace="slurm-control")
    assert calls == {LOCAL_READS: {"authentik": 1}, "identity": {"authentik": 1}}
