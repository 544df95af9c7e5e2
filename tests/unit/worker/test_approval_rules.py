"""The pure parts of approval checking: proofs signed and verified in-process, the allowed-signers file, the identity
map and the per-gate policies. (Interoperation with OpenSSH's own ssh-keygen: tests/security/test_approval_proofs.py;
the rules in a running worker: tests/security/test_approvals.py.)"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tenantflow.models.onboarding import OnboardingInput
from tenantflow.models.proofs import ApprovalStatement, SshSignature, StartProof, input_digest, start_statement
from tenantflow.worker.approvals import ApprovalRules, GatePolicy
from tenantflow.worker.principals import IdentityMap, PrincipalsFileError
from tenantflow.worker.signatures import AllowedSigners, ApprovalSigner, ProofError, SignersFileError, verify, write_key
from tests.workflows.contract import example_tenant

NOW = datetime(2026, 6, 1, tzinfo=UTC)
STATEMENT = ApprovalStatement(
    namespace="default",
    workflow_id="tenant/foo",
    run_id="run-a",
    gate="approve_plan",
    plan="0123456789abcdef",
    approver="bob@ops-host",
)


def key(tmp_path: Path, name: str) -> tuple[ApprovalSigner, str]:
    public = write_key(tmp_path / name, name)
    return ApprovalSigner(tmp_path / name), public


def test_a_proof_verifies_only_for_its_own_statement(tmp_path: Path) -> None:
    bob, public = key(tmp_path, "bob")
    signers = AllowedSigners.parse([f"bob {public}"])
    proof = bob.sign(STATEMENT)
    assert verify(proof, STATEMENT, signers, ["bob"], NOW) == bob.fingerprint == SshSignature.parse(proof).fingerprint
    for change in ({"run_id": "run-b"}, {"gate": "confirm_purge"}, {"plan": "fedcba9876543210"}, {"approver": "bob"}):
        with pytest.raises(ProofError, match="does not sign this answer"):
            verify(proof, STATEMENT.model_copy(update=change), signers, ["bob"], NOW)
    with pytest.raises(ProofError, match="not an allowed signer for 'bob@ops-host'"):
        verify(proof, STATEMENT, signers, ["alice"], NOW)
    with pytest.raises(ProofError, match="no TENANTFLOW_ALLOWED_SIGNERS"):
        verify(proof, STATEMENT, None, ["bob"], NOW)
    with pytest.raises(ProofError, match="not an SSH signature"):
        verify("bob says yes", STATEMENT, signers, ["bob"], NOW)


def test_a_start_proof_signs_its_start_only_and_survives_the_memo(tmp_path: Path) -> None:
    """A start statement (decision and gate ``start``, no run id) is no gate answer's statement, so a start proof
    never approves a gate (nor a gate proof a start); and the memo's JSON gives the worker the statement the client
    signed, the issue time included."""
    bob, public = key(tmp_path, "bob")
    signers = AllowedSigners.parse([f"bob {public}"])
    digest = input_digest(OnboardingInput(contract=example_tenant("tenant-foo")))
    start = start_statement("default", "tenant/foo", "TenantOnboarding", "bob@ops-host", NOW, digest)
    proof = StartProof(issued_at=NOW, proof=bob.sign(start), input_sha256=digest)
    memo = StartProof.model_validate_json(proof.model_dump_json())
    statement = memo.statement("default", "tenant/foo", "TenantOnboarding", "bob@ops-host", digest)
    assert statement.text() == start.text() and b"issued_at=2026-06-01T00:00:00+00:00" in start.text()
    assert f"input_sha256={digest}".encode() in start.text() and memo.input_sha256 == digest
    assert verify(memo.proof, statement, signers, ["bob"], NOW) == bob.fingerprint
    other_input = input_digest(OnboardingInput(contract=example_tenant("tenant-bar")))
    for other in (
        memo.statement("default", "tenant/foo", "TenantChange", "bob@ops-host", digest),
        memo.statement("default", "tenant/bar", "TenantOnboarding", "bob@ops-host", digest),
        memo.statement("default", "tenant/foo", "TenantOnboarding", "bob@ops-host", other_input),
        start_statement("default", "tenant/foo", "TenantOnboarding", "bob@ops-host", NOW.replace(minute=1), digest),
        STATEMENT.model_copy(update={"run_id": "", "gate": "start", "decision": "start"}),
    ):
        with pytest.raises(ProofError, match="does not sign this answer"):
            verify(memo.proof, other, signers, ["bob"], NOW)
    with pytest.raises(ProofError, match="does not sign this answer"):
        verify(bob.sign(STATEMENT), statement, signers, ["bob"], NOW)
    with pytest.raises(ValueError, match="timezone"):
        StartProof.model_validate({"issued_at": "2026-06-01T00:00:00", "proof": memo.proof})
    with pytest.raises(ValueError, match="has no UTC equivalent"):
        StartProof.model_validate({"issued_at": "9999-12-31T23:59:59-23:59", "proof": memo.proof})


def test_the_input_digest_is_that_of_the_input_as_the_worker_decodes_it() -> None:
    """The client digests the model it starts a run with, the worker the model it decoded from the payload: the two
    agree, and any change of the input changes the digest."""
    sent = OnboardingInput(contract=example_tenant("tenant-foo"))
    received = OnboardingInput.model_validate_json(sent.model_dump_json())
    assert input_digest(received) == input_digest(sent)
    assert input_digest(
        OnboardingInput(contract=example_tenant("tenant-foo"), approval_escalate_after_s=60)
    ) != input_digest(sent)


def test_allowed_signers_patterns_and_options(tmp_path: Path) -> None:
    _, public = key(tmp_path, "k")
    blob = SshSignature.parse(ApprovalSigner(tmp_path / "k").sign(STATEMENT)).public_key
    signers = AllowedSigners.parse(
        [
            "# a comment",
            "",
            f'*@ops-host,!mallory@ops-host namespaces="git,tenantflow-approval" {public}',
        ]
    )
    assert signers.allows(blob, ["Bob@OPS-host"], NOW)
    assert not signers.allows(blob, ["mallory@ops-host"], NOW)
    assert not signers.allows(blob, ["bob@elsewhere"], NOW)
    git_only = AllowedSigners.parse([f'* namespaces="git" {public}'])
    assert not git_only.allows(blob, ["bob"], NOW), "a key for git commits only does not sign approvals"
    expired = AllowedSigners.parse([f"* valid-after=20250101,valid-before=20260101Z {public}"])
    assert not expired.allows(blob, ["bob"], NOW)
    assert expired.allows(blob, ["bob"], datetime(2025, 6, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("bob ssh-rsa AAAAB3NzaC1yc2E= bob", "only ssh-ed25519 keys"),
        ("bob cert-authority ssh-ed25519 AAAA", "option cert-authority is not supported"),
        ("bob ssh-ed25519 not-base64!", "not a valid base64 ssh-ed25519 public key"),
        ("bob", "expected 'PRINCIPALS [OPTIONS] ssh-ed25519 BASE64 [COMMENT]'"),
        ("bob valid-before=tomorrow ssh-ed25519 AAAA", "time 'tomorrow' is not YYYYMMDD"),
    ],
)
def test_a_bad_allowed_signers_line_is_refused_naming_it(line: str, problem: str, tmp_path: Path) -> None:
    if "valid-before" in line:
        line = line.replace("ssh-ed25519 AAAA", write_key(tmp_path / "k", "k"))
    with pytest.raises(SignersFileError, match="line 2") as refused:
        AllowedSigners.parse(["# first", line])
    assert problem in str(refused.value)


def test_identities_map_to_principals_case_insensitively_and_unknown_ones_to_none() -> None:
    identities = IdentityMap.parse('[principals]\nalice = ["alice@laptop", "CN=alice,O=Example Corp"]\nbob = []\n')
    assert {identities.principal(i) for i in ("alice", "Alice@Laptop", "cn=alice,o=example corp")} == {"alice"}
    assert identities.principal("BOB") == "bob"
    assert identities.principal("alice@laptop2") is None
    assert IdentityMap().principal("alice") is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("alice = [", "not TOML"),
        ('alice = ["alice@laptop"]', "expected a [principals] table"),
        ('[principals]\nalice = ["me"]\nbob = ["ME"]', "identity 'ME' is listed for both 'alice' and 'bob'"),
        ('[principals]\nalice = "alice@laptop"', "principals.alice must be a list"),
        ('[principals]\n"a b" = []', "principal name 'a b' must match"),
    ],
)
def test_a_bad_identity_map_is_refused_naming_the_setting(text: str, problem: str) -> None:
    with pytest.raises(PrincipalsFileError, match="TENANTFLOW_PRINCIPALS") as refused:
        IdentityMap.parse(text)
    assert problem in str(refused.value)


def test_a_policy_covers_workflow_types_and_single_gates() -> None:
    policy = GatePolicy.parse(" TenantOnboarding, TenantOffboarding.confirm_purge ,")
    assert policy.covers("TenantOnboarding", "approve_plan") and policy.covers("TenantOnboarding", "retry_rollback")
    assert policy.covers("TenantOffboarding", "confirm_purge")
    assert not policy.covers("TenantOffboarding", "approve_plan")
    assert policy.workflow_types == {"TenantOnboarding", "TenantOffboarding"}
    assert not GatePolicy.parse("").entries


def test_the_approver_is_matched_by_principal_then_identity() -> None:
    rules = ApprovalRules(identities=IdentityMap.parse('[principals]\nalice = ["alice@laptop"]\n'))
    assert rules.names("Alice@Laptop") == ["alice", "Alice@Laptop"]
    assert rules.names("alice") == ["alice"]
    assert rules.names("carol") == ["carol"]
