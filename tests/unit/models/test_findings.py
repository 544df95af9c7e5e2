"""The one way findings are built: a passed check is info without a fix, a failed one carries its fix."""

from __future__ import annotations

from tenantflow.models.results import Finding, Severity


def test_a_passed_check_is_info_and_has_no_fix() -> None:
    assert Finding.passed("kube.rbac", "ClusterRole edit exists").model_dump() == {
        "check": "kube.rbac",
        "ok": True,
        "severity": "info",
        "message": "ClusterRole edit exists",
        "fix": "",
    }


def test_a_failed_check_is_an_error_unless_told_and_keeps_its_fix() -> None:
    failed = Finding.failed("kube.rbac", "ClusterRole edit does not exist", "install the default ClusterRoles")
    assert (failed.ok, failed.severity, failed.fix) == (False, "error", "install the default ClusterRoles")
    warned = Finding.failed("identity.ldap_tls", "not verified", "set LDAP_CA_FILE", severity=Severity.warning)
    assert (warned.ok, warned.severity) == (False, "warning")


def test_a_verdict_drops_the_fix_of_a_check_that_passed() -> None:
    assert Finding.verdict("smoke.nccl", True, "busbw 180 GB/s", "run the ACS runbook").fix == ""
    assert Finding.verdict("smoke.nccl", False, "busbw 3 GB/s", "run the ACS runbook").fix == "run the ACS runbook"


def test_a_problem_fails_the_check_with_its_own_message() -> None:
    assert Finding.of_problem("identity.group", None, "group free", "rename it").message == "group free"
    failed = Finding.of_problem("identity.group", "group taken", "group free", "rename it")
    assert (failed.ok, failed.message, failed.fix) == (False, "group taken", "rename it")


def test_only_failed_errors_block_a_run() -> None:
    assert Finding(check="a", ok=False, severity=Severity.error, message="m").blocks
    assert not Finding(check="a", ok=False, severity=Severity.warning, message="m").blocks
    assert not Finding(check="a", ok=True, severity=Severity.error, message="m").blocks


def test_the_builders_give_a_passing_info_or_a_failing_error_with_its_fix() -> None:
    assert Finding.failed("c", "broken", "mend it") == Finding(
        check="c", ok=False, severity=Severity.error, message="broken", fix="mend it"
    )
    assert Finding.verdict("c", True, "fine", "unused") == Finding(
        check="c", ok=True, severity=Severity.info, message="fine"
    )
    assert Finding.verdict("c", False, "broken", "mend it") == Finding.failed("c", "broken", "mend it")
    assert Finding.of_problem("c", None, "fine", "unused") == Finding.passed("c", "fine")
    assert Finding.of_problem("c", "broken", "fine", "mend it") == Finding.failed("c", "broken", "mend it")
