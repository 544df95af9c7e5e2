"""What an approval's proof signs, and the proof's wire format: an SSH signature (SSHSIG) over an approval statement.

A gate answer (``approve_plan``, ``reject_plan``, a yes/no gate, ``renew``) may carry ``proof``: an SSH signature
in the armored format ``ssh-keygen -Y sign -n tenantflow-approval`` writes and git verifies signed commits with
(OpenSSH's PROTOCOL.sshsig: https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.sshsig), over the
text of an :class:`ApprovalStatement`: the Temporal namespace, workflow id, run id, gate, plan (the plan hash,
what a renewal adds, or at ``smoke_failed`` the choice and the gate's opening), approver and decision. A proof
therefore answers exactly one gate of one run for one plan, as one approver: the same signature sent to another run
(a rerun of the same plan), another gate or another hash does not verify. The worker checks the signature and
that the signing key is allowed for the approver (:mod:`tenantflow.worker.signatures`); this module only builds the
statement and reads the signature's fields, which workflow code needs to record the signing key's fingerprint.

The same mechanism proves who started a run (:class:`StartProof`, memo ``started_by_proof`` next to ``started_by``):
the starter signs a statement with decision and gate ``start``, no run id (Temporal assigns it only at the start),
and as plan the workflow type, the digest of the run's input (:func:`input_digest`) and the proof's issue time. The
worker counts the starter for the four-eyes rule only when that proof verifies for the input the run was started
with and was issued within a few minutes of the run's start as Temporal records it, so a proof copied from an earlier
run of the same workflow id, or into a run that replaced it with another input, does not make that run look started
by someone else.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field, field_validator

from tenantflow.models.base import Strict

SIGNATURE_NAMESPACE = "tenantflow-approval"
"""The SSHSIG namespace of approval proofs (``ssh-keygen -Y sign -n tenantflow-approval``): a signature made for
another purpose (a git commit, a file) never counts as an approval."""
STATEMENT_HEADER = "tenantflow approval statement v1"
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
MAGIC = b"SSHSIG"
VERSION = 1
Decision = Literal["approve", "reject", "request", "start"]
START = "start"
"""The gate and decision of a start statement (:class:`StartProof`)."""


class ProofFormatError(ValueError):
    """A proof that is not an armored SSH signature."""


class ApprovalStatement(Strict):
    """What a proof signs: one decision at one gate of one run, by one approver."""

    namespace: str
    workflow_id: str
    run_id: str
    gate: str
    plan: str = ""
    approver: str
    decision: Decision = "approve"

    def text(self) -> bytes:
        """The signed message: a header line, then ``field: value`` per field, in this order."""
        fields = self.model_dump()
        for name, value in fields.items():
            if "\n" in str(value):
                raise ValueError(f"approval statement field {name} must be one line")
        return "\n".join([STATEMENT_HEADER, *(f"{name}: {value}" for name, value in fields.items()), ""]).encode()


class StartProof(Strict):
    """What the memo ``started_by_proof`` holds: the starter's signature of the run's start statement and when it
    was made. The signature is no secret (memos are in the history); it only counts for the run it was made for."""

    issued_at: AwareDatetime = Field(..., description="when the starter signed (the client's clock)")
    proof: str = Field(..., max_length=4000, description="an armored SSH signature of the start statement")
    input_sha256: str = Field(
        "", max_length=64, description="the digest of the run's input the proof signs (:func:`input_digest`)"
    )

    @field_validator("issued_at")
    @classmethod
    def _in_utc(cls, issued_at: datetime) -> datetime:
        """Refuse an issue time that has no UTC equivalent (``9999-12-31T23:59:59-23:59`` overflows)."""
        try:
            issued_at.astimezone(UTC)
        except (OverflowError, ValueError):
            raise ValueError(f"issued_at {issued_at.isoformat()} has no UTC equivalent") from None
        return issued_at

    def statement(
        self, namespace: str, workflow_id: str, workflow_type: str, started_by: str, input_sha256: str
    ) -> ApprovalStatement:
        """The start statement this proof must sign: ``started_by`` starts ``workflow_type`` as ``workflow_id`` in
        ``namespace`` with the input of digest ``input_sha256`` (the worker's own digest of the input the run
        received, not the one this proof states) at ``issued_at`` (the run id is not known before the start, so it
        is left empty)."""
        return start_statement(namespace, workflow_id, workflow_type, started_by, self.issued_at, input_sha256)


def input_digest(arg: BaseModel) -> str:
    """The SHA-256 (hex) of a workflow argument's canonical JSON: what a start proof binds, so that it counts only
    for a run started with that input. The client computes it of what it starts the run with, the worker of what
    the run received (the same model, decoded), so both must serialize alike: sorted keys, no spaces."""
    canonical = json.dumps(arg.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def start_statement(
    namespace: str, workflow_id: str, workflow_type: str, started_by: str, issued_at: datetime, input_sha256: str
) -> ApprovalStatement:
    """What a starter signs to prove that it starts ``workflow_type`` as ``workflow_id`` with the input of digest
    ``input_sha256`` (:func:`input_digest`) at ``issued_at``."""
    issued = issued_at.astimezone(UTC).isoformat()
    return ApprovalStatement(
        namespace=namespace,
        workflow_id=workflow_id,
        run_id="",
        gate=START,
        plan=f"workflow_type={workflow_type} input_sha256={input_sha256} issued_at={issued}",
        approver=started_by,
        decision=START,
    )


def ssh_string(value: bytes) -> bytes:
    """RFC 4251 ``string``: a uint32 length, then the bytes."""
    return struct.pack(">I", len(value)) + value


def read_string(data: bytes, offset: int) -> tuple[bytes, int]:
    """The RFC 4251 ``string`` at ``offset`` of ``data``, and the offset after it."""
    if offset + 4 > len(data):
        raise ProofFormatError("SSH signature truncated")
    (length,) = struct.unpack_from(">I", data, offset)
    end = offset + 4 + length
    if end > len(data):
        raise ProofFormatError("SSH signature truncated")
    return data[offset + 4 : end], end


@dataclass(frozen=True)
class SshSignature:
    """The fields of an SSHSIG blob."""

    public_key: bytes
    """The signer's public key in SSH wire format."""
    namespace: str
    hash_algorithm: str
    signature: bytes
    """The SSH signature blob (``string`` algorithm, ``string`` signature bytes)."""

    @classmethod
    def parse(cls, armored: str) -> SshSignature:
        """Read an armored SSH signature (``-----BEGIN SSH SIGNATURE-----``)."""
        text = armored.strip()
        if not (text.startswith(ARMOR_BEGIN) and text.endswith(ARMOR_END)):
            raise ProofFormatError(f"a proof is an armored SSH signature ({ARMOR_BEGIN} ... {ARMOR_END})")
        body = "".join(text[len(ARMOR_BEGIN) : -len(ARMOR_END)].split())
        try:
            blob = base64.b64decode(body, validate=True)
        except binascii.Error:
            raise ProofFormatError("the SSH signature is not valid base64") from None
        if blob[:6] != MAGIC or len(blob) < 10 or struct.unpack_from(">I", blob, 6)[0] != VERSION:
            raise ProofFormatError("not an SSHSIG version 1 signature")
        offset = 10
        public_key, offset = read_string(blob, offset)
        namespace, offset = read_string(blob, offset)
        _reserved, offset = read_string(blob, offset)
        hash_algorithm, offset = read_string(blob, offset)
        signature, offset = read_string(blob, offset)
        if offset != len(blob):
            raise ProofFormatError("trailing bytes after the SSH signature")
        return cls(public_key, namespace.decode(errors="replace"), hash_algorithm.decode(errors="replace"), signature)

    def armored(self) -> str:
        """The signature as ``ssh-keygen -Y sign`` writes it (76 base64 characters a line)."""
        blob = (
            MAGIC
            + struct.pack(">I", VERSION)
            + ssh_string(self.public_key)
            + ssh_string(self.namespace.encode())
            + ssh_string(b"")
            + ssh_string(self.hash_algorithm.encode())
            + ssh_string(self.signature)
        )
        body = base64.b64encode(blob).decode()
        return "\n".join([ARMOR_BEGIN, *(body[i : i + 76] for i in range(0, len(body), 76)), ARMOR_END])

    @property
    def fingerprint(self) -> str:
        return key_fingerprint(self.public_key)


def signed_data(namespace: str, hash_algorithm: str, message: bytes) -> bytes:
    """What the key signs for ``message`` (PROTOCOL.sshsig): the preamble, namespace, reserved, hash name and
    ``H(message)``."""
    digest = hashlib.new(hash_algorithm, message).digest()
    return (
        MAGIC
        + ssh_string(namespace.encode())
        + ssh_string(b"")
        + ssh_string(hash_algorithm.encode())
        + ssh_string(digest)
    )


def key_fingerprint(public_key: bytes) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(public_key).digest()).decode().rstrip("=")


def proof_fingerprint(proof: str | None) -> str:
    """The fingerprint of the key that made ``proof``; empty without one (or for one the worker never accepted)."""
    if not proof:
        return ""
    try:
        return SshSignature.parse(proof).fingerprint
    except ProofFormatError:
        return ""
