"""The handover sheet: what the tenant receives, with the runbook's SSH snippet (step 5c) for every user."""

from __future__ import annotations

import re

from tenantflow.activities.records.handover import render_markdown
from tenantflow.models.onboarding import SmokeEvidence
from tests.workflows.contract import example_tenant


def test_every_user_gets_an_ssh_snippet_with_their_name() -> None:
    contract = example_tenant()
    sheet = render_markdown(contract, ["gpu-h100-a-01", "gpu-h100-a-02"])
    ssh = sheet.split("## SSH config", 1)[1].split("## Capacity contract", 1)[0]
    assert re.findall(r"^    User +(\S+)$", ssh, flags=re.MULTILINE) == contract.usernames == ["alice", "bob", "carol"]
    assert ssh.count("Host login-foo\n    HostName       login.tenant-foo.example.internal\n") == 3
    for user in contract.usernames:
        assert f"### {user}\n\n```\n# ~/.ssh/config snippet for tenant-foo\n" in ssh


def test_the_sheet_shows_what_each_smoke_test_ran_and_a_skipped_test_with_why() -> None:
    contract = example_tenant()
    ran = SmokeEvidence(
        check="smoke.nccl",
        ran="single-node NCCL all-reduce, 8 ranks",
        state="COMPLETED",
        nodes=["gpu-03"],
        job_id=41,
        figures={"busbw_gbps_at_4gb": "195.0", "tier_busbw_gbps": "190.0"},
    )
    skipped = SmokeEvidence(check="smoke.nccl.two_node", ran="", state="SKIPPED", note="the tenant has one node")
    sheet = render_markdown(contract, ["gpu-03"], [ran, skipped])
    assert sheet.split("## Smoke tests\n\n", 1)[1].split("\n\n", 1)[0].splitlines() == [
        "- smoke.nccl: single-node NCCL all-reduce, 8 ranks on gpu-03 (job 41 COMPLETED): "
        "busbw_gbps_at_4gb 195.0; tier_busbw_gbps 190.0",
        "- smoke.nccl.two_node: SKIPPED: the tenant has one node",
    ]
    assert "## Smoke tests" not in render_markdown(contract, ["gpu-03"])
