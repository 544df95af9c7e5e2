"""Principals and their approval keys made on one machine, for the demo (and tests): an identity map, an
allowed-signers file and one key per principal, in a directory the worker is pointed at.

A real deployment writes these files itself (operators' own SSH keys in ``TENANTFLOW_ALLOWED_SIGNERS``, their
identities in ``TENANTFLOW_PRINCIPALS``: see :mod:`tenantflow.worker.signatures` and
:mod:`tenantflow.worker.principals`); the demo needs two people who exist only for it, a requester and an approver,
so that its approval passes the four-eyes rule the way a real one does.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.principals import PRINCIPALS_ENV
from tenantflow.worker.signatures import ALLOWED_SIGNERS_ENV, ApprovalSigner, write_key


class LocalApprovers:
    """Principals added one by one to the identity map and allowed signers in ``directory``."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.principals_file = directory / "principals.toml"
        self.allowed_signers_file = directory / "allowed_signers"
        self.identities: dict[str, list[str]] = {}
        self.allowed_signers_file.touch()

    def add(self, principal: str, identities: Sequence[str] = (), signs_for: str | None = None) -> ApprovalSigner:
        """A new principal with ``identities`` and a fresh key allowed to sign for it (or for the principal pattern
        ``signs_for``, ``*`` for a service that authenticates people itself); the key's signer."""
        key = self.directory / f"{principal}.key"
        public = write_key(key, f"{principal}@tenantflow-approvals")
        with self.allowed_signers_file.open("a") as signers:
            signers.write(f"{signs_for or principal} {public}\n")
        self.identities[principal] = list(identities)
        lines = ["[principals]", *(f"{name} = {json.dumps(ids)}" for name, ids in self.identities.items())]
        self.principals_file.write_text("\n".join(lines) + "\n")
        return ApprovalSigner(key)

    def env(self) -> dict[str, str]:
        """The worker's settings that point at these files."""
        return {PRINCIPALS_ENV: str(self.principals_file), ALLOWED_SIGNERS_ENV: str(self.allowed_signers_file)}


@dataclass(frozen=True)
class StandInOperators:
    """Two people who exist only for a demo or a bench, each with a key: one starts runs, the other approves them,
    as the four-eyes rule and verified approvers (on by default) require."""

    trust: LocalApprovers
    requester: str
    approver: str

    @classmethod
    def make(cls, directory: Path, requester: str, approver: str) -> StandInOperators:
        """Fresh principals ``requester`` and ``approver`` (and their keys) in ``directory``, emptied first."""
        shutil.rmtree(directory, ignore_errors=True)
        trust = LocalApprovers(directory)
        for name in (requester, approver):
            trust.add(name)
        return cls(trust, requester, approver)

    def client(self, client: Client, task_queue: str, principal: str) -> TenantflowClient:
        """A client that starts runs and answers gates as ``principal``, signing with its key."""
        return TenantflowClient(
            client, task_queue, ApprovalSigner(self.trust.directory / f"{principal}.key"), principal
        )

    def clients(self, client: Client, task_queue: str) -> OperatorClients:
        """The requester's client and the approver's, both signing with their own key: runs the requester starts
        carry its start proof, so the four-eyes rule counts it as their starter and lets the approver approve."""
        return OperatorClients(
            self.client(client, task_queue, self.requester), self.client(client, task_queue, self.approver)
        )


@dataclass(frozen=True)
class OperatorClients:
    """The stand-in operators' clients: one starts runs, the other answers their gates."""

    requester: TenantflowClient
    approver: TenantflowClient
