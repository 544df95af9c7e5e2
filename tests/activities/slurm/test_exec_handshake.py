"""An exec whose websocket handshake the apiserver refuses with a transient status never ran: it is opened again
in place (honouring ``Retry-After``), and a handshake that keeps being refused fails with the apiserver's status.
An exec whose connection ends before the command's exit status (the lab's lost-response fault: the command ran)
fails the attempt retryably, saying it may have run, and is not opened again in place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import yaml
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.httpretry import READ_ATTEMPTS
from tenantflow.activities.slurm.cli import SlurmCtl
from tests.activities.slurm.conftest import SlurmLab, registered_kubeconfig


@contextmanager
def refused_execs(lab: SlurmLab, rule: dict[str, Any]) -> Iterator[httpx.Client]:
    """The lab's apiserver refuses exec handshakes by ``rule`` while the block runs; its journal starts empty."""
    server = yaml.safe_load(registered_kubeconfig(lab).read_text())["clusters"][0]["cluster"]["server"]
    with httpx.Client(base_url=server, verify=False, timeout=10) as http:
        http.delete("/_lab/requests").raise_for_status()
        http.put("/_lab/faults", json={"rules": [{"path": r"/exec$", **rule}], "seed": 3}).raise_for_status()
        try:
            yield http
        finally:
            http.delete("/_lab/faults").raise_for_status()


def exec_answers(http: httpx.Client) -> list[int]:
    return [e["status"] for e in http.get("/_lab/requests").json()["requests"] if e["path"].endswith("/exec")]


def test_refused_handshakes_are_opened_again_in_place(lab: SlurmLab) -> None:
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    with refused_execs(lab, {"error_rate": 0.5, "error_status": 503, "retry_after_s": 0}) as http:
        outputs = [ctl.run(["scontrol", "ping"]) for _ in range(6)]
        answers = exec_answers(http)
    assert all(out.exit_code == 0 for out in outputs), outputs
    assert 503 in answers, answers
    assert len(answers) > len(outputs), answers


def test_a_handshake_refused_every_time_fails_with_the_apiservers_status(lab: SlurmLab) -> None:
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    with refused_execs(lab, {"error_rate": 1.0, "error_status": 429, "retry_after_s": 0}) as http:
        with pytest.raises(ApplicationError, match="HTTP 429") as err:
            ctl.run(["scontrol", "ping"])
        answers = exec_answers(http)
    assert answers == [429] * READ_ATTEMPTS, answers
    assert not err.value.non_retryable


def test_a_forbidden_handshake_is_not_tried_again(lab: SlurmLab) -> None:
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    with refused_execs(lab, {"error_rate": 1.0, "error_status": 403}) as http:
        with pytest.raises(ApplicationError, match="HTTP 403"):
            ctl.run(["scontrol", "ping"])
        assert exec_answers(http) == [403]


def test_an_exec_whose_status_is_lost_fails_retryably_and_ran_once(lab: SlurmLab) -> None:
    ctl = SlurmCtl(target=lab.target, pod="slurmctld-0")
    argv = ["sacctmgr", "-i", "add", "qos", "lost-answer", "Priority=7"]
    ran = len(lab.exec_handler.history)
    try:
        with refused_execs(lab, {"drop_after_rate": 1.0}) as http:
            with pytest.raises(ApplicationError, match="ended before the command's exit status") as err:
                ctl.run(argv)
            answers = http.get("/_lab/requests").json()["requests"]
        assert not err.value.non_retryable and "may have run" in str(err.value)
        assert lab.exec_handler.history[ran:] == [argv]
        assert [e["injected"] for e in answers] == ["lost_response"]
        assert "lost-answer|7" in lab.sh("sacctmgr", "-n", "-P", "show", "qos", "lost-answer", "format=name,priority")
    finally:
        lab.sh("sacctmgr", "-i", "delete", "qos", "lost-answer")
