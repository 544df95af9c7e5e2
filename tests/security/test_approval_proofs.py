"""Approval proofs are OpenSSH's SSHSIG, checked against the real ``ssh-keygen``: what tenantflow signs, ``ssh-keygen
-Y verify`` accepts with the same allowed-signers line, and what ``ssh-keygen -Y sign`` signs, the worker verifies;
a signature for another namespace (a git commit) is no approval."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tenantflow.models.proofs import SIGNATURE_NAMESPACE, ApprovalStatement
from tenantflow.worker.signatures import AllowedSigners, ApprovalSigner, ProofError, verify

STATEMENT = ApprovalStatement(
    namespace="default",
    workflow_id="tenant/foo",
    run_id="0195d3c4-run-a",
    gate="approve_plan",
    plan="0123456789abcdef",
    approver="bob@ops-host",
)
NOW = datetime.now(UTC)


def ssh_keygen(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["ssh-keygen", *args], input=stdin, capture_output=True, check=False, timeout=60)


@pytest.fixture
def bob(tmp_path: Path) -> tuple[Path, Path]:
    """Bob's key made by ssh-keygen, and an allowed-signers file listing it for bob."""
    made = ssh_keygen("-q", "-t", "ed25519", "-N", "", "-C", "bob", "-f", str(tmp_path / "bob"))
    assert made.returncode == 0, made.stderr
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"bob {(tmp_path / 'bob.pub').read_text()}")
    return tmp_path / "bob", allowed


def test_ssh_keygen_verifies_what_tenantflow_signs(bob: tuple[Path, Path], tmp_path: Path) -> None:
    key, allowed = bob
    signature = tmp_path / "statement.sig"
    signature.write_text(ApprovalSigner(key).sign(STATEMENT))
    checked = ssh_keygen(
        "-Y", "verify", "-f", str(allowed), "-I", "bob", "-n", SIGNATURE_NAMESPACE, "-s", str(signature),
        stdin=STATEMENT.text(),
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert b'Good "tenantflow-approval" signature for bob' in checked.stdout
    tampered = STATEMENT.model_copy(update={"run_id": "0195d3c4-run-b"}).text()
    args = ("-Y", "verify", "-f", str(allowed), "-I", "bob", "-n", SIGNATURE_NAMESPACE, "-s", str(signature))
    assert ssh_keygen(*args, stdin=tampered).returncode != 0


def test_tenantflow_verifies_what_ssh_keygen_signs(bob: tuple[Path, Path]) -> None:
    key, allowed = bob
    signer = ApprovalSigner(key)
    by_ssh_keygen = signer.ssh_keygen_sign(STATEMENT.text())
    fingerprint = ssh_keygen("-l", "-f", f"{key}.pub").stdout.split()[1].decode()
    assert verify(by_ssh_keygen, STATEMENT, AllowedSigners.load(allowed), ["bob"], NOW) == fingerprint
    assert signer.fingerprint == fingerprint


def test_a_signature_for_another_namespace_is_no_approval(bob: tuple[Path, Path]) -> None:
    key, allowed = bob
    for_git = ssh_keygen("-q", "-Y", "sign", "-f", str(key), "-n", "git", stdin=STATEMENT.text())
    assert for_git.returncode == 0, for_git.stderr
    with pytest.raises(ProofError, match="signed for namespace 'git'"):
        verify(for_git.stdout.decode(), STATEMENT, AllowedSigners.load(allowed), ["bob"], NOW)
