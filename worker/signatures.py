"""Approval proofs made and checked: SSH signatures (SSHSIG) by an approver's key, allowed by an allowed-signers file.

The mechanism is git's for signed commits. An approver signs the approval statement of one answer
(:class:`~tenantflow.models.proofs.ApprovalStatement`) with an SSH key, as ``ssh-keygen -Y sign -n
tenantflow-approval`` does (PROTOCOL.sshsig: https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.sshsig);
the worker verifies the signature against the statement it builds from the run itself (namespace, workflow id, run
id, gate, plan) and accepts the key only if the worker's allowed-signers file (``TENANTFLOW_ALLOWED_SIGNERS``, the
format of ssh-keygen(1)'s ALLOWED SIGNERS section: https://man.openbsd.org/ssh-keygen#ALLOWED_SIGNERS) lists it for
the approver. Each line is ``PRINCIPALS [OPTIONS] ssh-ed25519 BASE64 [COMMENT]``: PRINCIPALS a comma-separated
pattern list (``*`` and ``?``, ``!`` negates) matched case-insensitively against the approver's principal (the
identity map's name, :mod:`tenantflow.worker.principals`) or, for an identity the map does not know, the identity
itself; OPTIONS ``namespaces="..."`` (must allow ``tenantflow-approval``), ``valid-after=`` and ``valid-before=``
(``YYYYMMDD[HHMM[SS]]``, taken as UTC). A service that authenticates people itself (the HTTP API, which signs for
its token's user) is listed with ``*``. Only Ed25519 keys are accepted; ``cert-authority`` lines are refused.

:class:`ApprovalSigner` makes proofs for the CLI, the Python API and the HTTP API from the key file
``TENANTFLOW_APPROVAL_KEY`` (an OpenSSH private key). A key the ``cryptography`` package reads without a passphrase
signs in-process; any other (passphrase-protected, held by ssh-agent when the file is the ``.pub``, a security key)
is signed by ``ssh-keygen -Y sign`` itself, which asks for the passphrase or uses the agent.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_ssh_private_key,
)

from tenantflow.models.proofs import (
    SIGNATURE_NAMESPACE,
    ApprovalStatement,
    ProofFormatError,
    SshSignature,
    key_fingerprint,
    read_string,
    signed_data,
    ssh_string,
)

ALLOWED_SIGNERS_ENV = "TENANTFLOW_ALLOWED_SIGNERS"
APPROVAL_KEY_ENV = "TENANTFLOW_APPROVAL_KEY"
KEY_TYPE = "ssh-ed25519"
HASHES = ("sha512", "sha256")
TIME_FORMATS = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}


def _cache_invalid_signature() -> None:
    """Have cryptography's Rust core import ``InvalidSignature`` now. It imports the type the first time it raises
    it, through ``sys.modules``, which Temporal's workflow sandbox replaces (while the approval checks run in a
    validator) with a mapping the C import machinery cannot use: a panic that aborts the worker. Raised once here,
    outside any workflow, the type stays cached for the process."""
    with contextlib.suppress(InvalidSignature):
        Ed25519PrivateKey.generate().public_key().verify(bytes(64), b"")


_cache_invalid_signature()


class ProofError(ValueError):
    """A proof that does not prove the answer it came with; the message says why and how to approve."""


class SignersFileError(ValueError):
    """An allowed-signers file that cannot be used; the message names the line and the fix."""


def ed25519_key(blob: bytes) -> Ed25519PublicKey:
    """The Ed25519 key of an SSH public key blob (``string "ssh-ed25519"``, ``string`` 32 bytes)."""
    key_type, offset = read_string(blob, 0)
    if key_type.decode(errors="replace") != KEY_TYPE:
        raise ProofFormatError(f"only {KEY_TYPE} keys sign approvals, not {key_type.decode(errors='replace')}")
    raw, _ = read_string(blob, offset)
    return Ed25519PublicKey.from_public_bytes(raw)


def public_blob(key: Ed25519PublicKey) -> bytes:
    return ssh_string(KEY_TYPE.encode()) + ssh_string(key.public_bytes(Encoding.Raw, PublicFormat.Raw))


def matches(patterns: str, name: str) -> bool:
    """Whether ``name`` matches the OpenSSH pattern list ``patterns`` (case-insensitive; a matching ``!pattern``
    excludes)."""
    found = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        body = pattern.removeprefix("!")
        regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in body)
        if re.fullmatch(regex, name, flags=re.IGNORECASE):
            if negated:
                return False
            found = True
    return found


def parse_time(value: str, line: str) -> datetime:
    digits = value.removesuffix("Z")
    pattern = TIME_FORMATS.get(len(digits))
    try:
        if pattern is None or not digits.isdigit():
            raise ValueError(value)
        return datetime.strptime(digits, pattern).replace(tzinfo=UTC)
    except ValueError:
        raise SignersFileError(f"{line}: time {value!r} is not YYYYMMDD[HHMM[SS]][Z]") from None


@dataclass(frozen=True)
class AllowedSigner:
    """One line of the allowed-signers file."""

    principals: str
    key: bytes
    namespaces: str | None = None
    valid_after: datetime | None = None
    valid_before: datetime | None = None

    def allows(self, key: bytes, names: Iterable[str], now: datetime) -> bool:
        if key != self.key or not any(matches(self.principals, name) for name in names):
            return False
        if self.namespaces is not None and not matches(self.namespaces, SIGNATURE_NAMESPACE):
            return False
        return not (self.valid_after and now < self.valid_after) and not (self.valid_before and now > self.valid_before)


def split_fields(text: str, separators: str) -> list[str]:
    """``text`` split at ``separators`` outside double quotes (the quotes kept)."""
    fields: list[str] = []
    current, quoted = "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char in separators and not quoted:
            if current:
                fields.append(current)
            current = ""
        else:
            current += char
    if current:
        fields.append(current)
    return fields


def signer_line(entry: str, where: str) -> AllowedSigner:
    """One allowed-signers line: ``PRINCIPALS [OPTIONS] KEYTYPE BASE64 [COMMENT]``."""
    fields = split_fields(entry, " \t")
    options: dict[str, str] = {}
    if len(fields) > 1 and not fields[1].startswith(("ssh-", "ecdsa-", "sk-")):
        for option in split_fields(fields.pop(1), ","):
            name, _, value = option.partition("=")
            options[name.lower()] = value.strip('"')
    unknown = set(options) - {"namespaces", "valid-after", "valid-before"}
    if unknown:
        raise SignersFileError(f"{where}: option {', '.join(sorted(unknown))} is not supported")
    if len(fields) < 3:
        raise SignersFileError(f"{where}: expected 'PRINCIPALS [OPTIONS] {KEY_TYPE} BASE64 [COMMENT]'")
    principals, key_type, encoded = (field.strip('"') for field in fields[:3])
    if key_type != KEY_TYPE:
        raise SignersFileError(
            f"{where}: only {KEY_TYPE} keys sign approvals, not {key_type} (make one with `ssh-keygen -t ed25519`)"
        )
    try:
        key = base64.b64decode(encoded, validate=True)
        ed25519_key(key)
    except (binascii.Error, ProofFormatError, ValueError):
        raise SignersFileError(f"{where}: the key is not a valid base64 {KEY_TYPE} public key") from None
    after, before = options.get("valid-after"), options.get("valid-before")
    return AllowedSigner(
        principals=principals,
        key=key,
        namespaces=options.get("namespaces"),
        valid_after=parse_time(after, where) if after else None,
        valid_before=parse_time(before, where) if before else None,
    )


@dataclass(frozen=True)
class AllowedSigners:
    """The keys allowed to prove approvers, and for whom."""

    signers: tuple[AllowedSigner, ...]

    @classmethod
    def parse(cls, lines: Iterable[str], source: str = ALLOWED_SIGNERS_ENV) -> AllowedSigners:
        signers = []
        for number, raw in enumerate(lines, start=1):
            entry = raw.strip()
            if entry and not entry.startswith("#"):
                signers.append(signer_line(entry, f"{source} line {number}"))
        return cls(tuple(signers))

    @classmethod
    def load(cls, path: Path) -> AllowedSigners:
        try:
            return cls.parse(path.read_text().splitlines(), f"{ALLOWED_SIGNERS_ENV}={path}")
        except FileNotFoundError:
            raise SignersFileError(f"{ALLOWED_SIGNERS_ENV}={path}: no such file") from None

    def allows(self, key: bytes, names: Sequence[str], now: datetime) -> bool:
        return any(signer.allows(key, names, now) for signer in self.signers)


def verify(
    proof: str, statement: ApprovalStatement, signers: AllowedSigners | None, names: Sequence[str], now: datetime
) -> str:
    """Check that ``proof`` signs ``statement`` with a key ``signers`` allow for one of ``names`` (the approver's
    principal and identity) at ``now``; the key's fingerprint. Raises :class:`ProofError` saying why not."""
    try:
        signature = SshSignature.parse(proof)
        key = ed25519_key(signature.public_key)
        algorithm, offset = read_string(signature.signature, 0)
        raw, _ = read_string(signature.signature, offset)
    except (ProofFormatError, ValueError) as exc:
        raise ProofError(f"the proof is not an SSH signature tenantflow can check: {exc}") from None
    if signature.namespace != SIGNATURE_NAMESPACE or signature.hash_algorithm not in HASHES:
        raise ProofError(
            f"the proof was signed for namespace {signature.namespace!r} with {signature.hash_algorithm}, "
            f"not {SIGNATURE_NAMESPACE!r} with {' or '.join(HASHES)}"
        )
    try:
        if algorithm.decode(errors="replace") != KEY_TYPE:
            raise InvalidSignature
        key.verify(raw, signed_data(signature.namespace, signature.hash_algorithm, statement.text()))
    except InvalidSignature:
        raise ProofError(
            f"the proof does not sign this answer (approver {statement.approver!r}, gate {statement.gate!r}, "
            f"plan {statement.plan or '-'!r} of run {statement.run_id} of {statement.workflow_id}): it was made for "
            "another run, gate, plan or approver; sign this one (`tenantflow approve` does)"
        ) from None
    fingerprint = signature.fingerprint
    if signers is None:
        raise ProofError(
            f"the proof's key {fingerprint} cannot be checked: this worker has no {ALLOWED_SIGNERS_ENV} file"
        )
    if not signers.allows(signature.public_key, names, now):
        raise ProofError(
            f"the key {fingerprint} is not an allowed signer for {statement.approver!r} in {ALLOWED_SIGNERS_ENV} "
            f"(principals tried: {', '.join(names)}); add `PRINCIPAL {KEY_TYPE} ...` for it there"
        )
    return fingerprint


class ApprovalSigner:
    """Signs approval statements with the key file ``path``: in-process when it is an unencrypted Ed25519 key,
    else through ``ssh-keygen -Y sign`` (passphrase prompt, ssh-agent, security keys)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.key: Ed25519PrivateKey | None = None
        try:
            loaded = load_ssh_private_key(path.read_bytes(), None)
        except FileNotFoundError:
            raise ProofError(f"{APPROVAL_KEY_ENV}={path}: no such file") from None
        except (ValueError, TypeError, UnsupportedAlgorithm):
            return  # encrypted, a public key for the agent, or a security key: ssh-keygen signs
        if not isinstance(loaded, Ed25519PrivateKey):
            raise ProofError(f"{APPROVAL_KEY_ENV}={path}: only {KEY_TYPE} keys sign approvals")
        self.key = loaded

    @property
    def fingerprint(self) -> str | None:
        """The key's fingerprint when it signs in-process."""
        return key_fingerprint(public_blob(self.key.public_key())) if self.key else None

    def sign(self, statement: ApprovalStatement) -> str:
        """The armored SSH signature of ``statement``."""
        message = statement.text()
        if self.key is None:
            return self.ssh_keygen_sign(message)
        raw = self.key.sign(signed_data(SIGNATURE_NAMESPACE, HASHES[0], message))
        return SshSignature(
            public_key=public_blob(self.key.public_key()),
            namespace=SIGNATURE_NAMESPACE,
            hash_algorithm=HASHES[0],
            signature=ssh_string(KEY_TYPE.encode()) + ssh_string(raw),
        ).armored()

    def ssh_keygen_sign(self, message: bytes) -> str:
        done = subprocess.run(
            ["ssh-keygen", "-q", "-Y", "sign", "-f", str(self.path), "-n", SIGNATURE_NAMESPACE],
            input=message,
            capture_output=True,
            check=False,
            timeout=300,
        )
        if done.returncode != 0:
            reason = done.stderr.decode(errors="replace").strip()
            raise ProofError(f"{APPROVAL_KEY_ENV}={self.path}: ssh-keygen -Y sign failed: {reason}")
        return done.stdout.decode()

    @classmethod
    def from_path(cls, path: Path | None) -> ApprovalSigner | None:
        return cls(path) if path is not None else None


def write_key(path: Path, comment: str) -> str:
    """Write a fresh unencrypted Ed25519 OpenSSH private key to ``path`` (mode 0600), as ``ssh-keygen -t ed25519
    -N ''`` would; its public line (``ssh-ed25519 BASE64 COMMENT``) for an allowed-signers file."""
    key = Ed25519PrivateKey.generate()
    path.touch(mode=0o600, exist_ok=False)
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption()))
    public = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    return f"{public} {comment}"
