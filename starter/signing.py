"""Who the Python API (:class:`~tenantflow.starter.client.TenantflowClient`) acts as, and the proofs it sends.

With ``TENANTFLOW_APPROVAL_KEY`` set (or a :class:`~tenantflow.worker.signatures.ApprovalSigner` given), every gate
answer carries a proof: the signature of its approval statement (namespace, workflow id, the run id it is sent to,
gate, plan hash, approver), so the worker records the approver as verified (:mod:`tenantflow.worker.approvals`).
Every run it starts carries one too, next to its starter (memo ``started_by``): the signature of the start statement
(namespace, workflow id, workflow type, starter, issue time; memo ``started_by_proof``), without which the four-eyes
rule counts the starter as only declared and refuses every approval of the run.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any, Self

from pydantic import BaseModel
from temporalio.client import Client, WorkflowHandle

from tenantflow.models.gates import STARTED_BY_MEMO, STARTED_BY_PROOF_MEMO
from tenantflow.models.proofs import ApprovalStatement, Decision, StartProof, input_digest, start_statement
from tenantflow.worker.config import TemporalSettings
from tenantflow.worker.signatures import APPROVAL_KEY_ENV, ApprovalSigner
from tenantflow.worker.temporal import connect

log = logging.getLogger(__name__)


class SigningClient:
    """A Temporal client acting for an identity, with the signer (if any) that proves its starts and gate answers."""

    def __init__(
        self, client: Client, task_queue: str, signer: ApprovalSigner | None = None, identity: str | None = None
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.signer = signer
        """Signs this client's gate answers (None: they carry no proof, the approver is declared)."""
        self._identity = identity

    @classmethod
    async def connect(cls, settings: TemporalSettings | None = None) -> Self:
        settings = settings or TemporalSettings()
        return cls(await connect(settings), settings.task_queue, ApprovalSigner.from_path(settings.approval_key))

    @property
    def identity(self) -> str:
        """Who starts runs and answers gates through this client: the identity it was given, else the Temporal
        client identity."""
        return self._identity or self.client.identity

    def handle(self, workflow_id: str) -> WorkflowHandle[Any, Any]:
        return self.client.get_workflow_handle(workflow_id)

    async def _gate_handle(self, workflow_id: str) -> WorkflowHandle[Any, Any]:
        """The run a gate answer goes to: with a signer, the latest run by its id (the proof names it)."""
        if self.signer is None:
            return self.handle(workflow_id)
        run_id = (await self.handle(workflow_id).describe()).run_id
        return self.client.get_workflow_handle(workflow_id, run_id=run_id)

    async def _proof(
        self, handle: WorkflowHandle[Any, Any], gate: str, approver: str, plan: str = "", decision: Decision = "approve"
    ) -> str | None:
        """The signature of this answer's approval statement; None without a signer."""
        if self.signer is None or handle.run_id is None:
            return None
        statement = ApprovalStatement(
            namespace=self.client.namespace,
            workflow_id=handle.id,
            run_id=handle.run_id,
            gate=gate,
            plan=plan,
            approver=approver,
            decision=decision,
        )
        return await asyncio.to_thread(self.signer.sign, statement)

    async def start_memo(self, workflow_id: str, workflow_type: str, started_by: str, arg: BaseModel) -> dict[str, Any]:
        """The memo of a run this client starts as ``workflow_id`` of ``workflow_type`` with the input ``arg`` for
        ``started_by``: the starter, and with a signer its start proof, which binds the input's digest (the
        four-eyes rule counts the starter only with one, and only for a run started with that input)."""
        memo: dict[str, Any] = {STARTED_BY_MEMO: started_by}
        if self.signer is None:
            log.warning(
                "%s starts %s without a start proof (no %s): its starter is only declared, so under the four-eyes "
                "rule nobody can approve it; set %s to your SSH key, or start it through the HTTP API",
                started_by,
                workflow_id,
                APPROVAL_KEY_ENV,
                APPROVAL_KEY_ENV,
            )
        else:
            issued_at = datetime.now(UTC).replace(microsecond=0)
            digest = input_digest(arg)
            statement = start_statement(
                self.client.namespace, workflow_id, workflow_type, started_by, issued_at, digest
            )
            proof = await asyncio.to_thread(self.signer.sign, statement)
            memo[STARTED_BY_PROOF_MEMO] = StartProof(issued_at=issued_at, proof=proof, input_sha256=digest)
        return memo

    def _approver(self, on_behalf_of: str | None) -> str:
        """Who a start or a gate answer is recorded under: this client's identity, or the user a caller
        authenticated (the HTTP API's token user) that this client acts for."""
        return on_behalf_of or self.identity
