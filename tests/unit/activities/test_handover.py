"""The handover sheet: what the tenant receives, with the runbook's SSH snippet (step 5c) for every user."""

from __future__ import annotations

import re

from tenantflow.activities.records.handover import render_markdown
from tests.workflows.contract import example_tenant


def test_every_user_gets_an_ssh_snippet_with_their_name() -> None:
    contract = example_tenant()
    sheet = render_markdown(contract, ["gpu-h100-a-01", "gpu-h100-a-02"])
    ssh = sheet.split("## SSH config", 1)[1].split("## Capacity contract", 1)[0]
    assert re.findall(r"^    User +(\S+)$", ssh, flags=re.MULTILINE) == contract.usernames == ["alice", "bob", "carol"]
    assert ssh.count("Host login-foo\n    HostName       login.tenant-foo.example.internal\n") == 3
    for user in contract.usernames:
        assert f"### {user}\n\n```\n# ~/.ssh/config snippet for tenant-foo\n" in ssh
