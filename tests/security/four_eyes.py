"""A fake-activity worker with the shipped approval rules (four-eyes and verified approvers on by default) read from
the session's principals and allowed signers (tests/approvers.py), and clients with chosen identities that sign
their gate answers with their principal's key."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.activities.records import lifecycle
from tenantflow.models.gates import ApprovePlan
from tenantflow.models.proofs import ApprovalStatement
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.approvals import Approvals
from tenantflow.worker.codec import PLAIN
from tenantflow.worker.config import GUARDED_WORKFLOWS, WorkerSettings
from tenantflow.worker.run import approval_rules
from tenantflow.worker.signatures import ApprovalSigner
from tenantflow.workflows.lifecycle import TenantLifecycle
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.plan import TenantPlan
from tenantflow.workflows.record_reads import TenantRecords
from tenantflow.workflows.tenant_hold import TenantHold
from tests.approvers import session_approvers
from tests.workflows.fakes import FakeWorld

UNSIGNED: Any = object()
"""``client_as(..., signer=UNSIGNED)``: a client whose answers carry no proof."""


async def client_as(
    env: WorkflowEnvironment, identity: str, task_queue: str, signer: ApprovalSigner | None = None
) -> TenantflowClient:
    """A tenantflow client on ``env`` that presents ``identity`` to Temporal and signs with ``signer`` (by default
    the key of the principal ``identity`` belongs to; ``UNSIGNED``: none)."""
    config = env.client.service_client.config
    client = await Client.connect(
        config.target_host, namespace=env.client.namespace, identity=identity, data_converter=PLAIN
    )
    key = session_approvers().signer_of(identity) if signer is None else None if signer is UNSIGNED else signer
    return TenantflowClient(client, task_queue, signer=key)


@asynccontextmanager
async def four_eyes_worker(
    env: WorkflowEnvironment, world: FakeWorld | None = None, lifecycle_too: bool = False, **settings: str
) -> AsyncIterator[str]:
    """Yield the task queue of a worker with the approval rules of ``WorkerSettings(**settings)`` (four-eyes and
    verified approvers for every guarded workflow type unless ``settings`` say otherwise, with the session's
    principals and allowed signers) over onboarding and offboarding, and with ``lifecycle_too`` the lifecycle a
    completed onboarding starts (its notices only logged)."""
    queue = f"four-eyes-{uuid.uuid4().hex[:8]}"
    guarded = {"TENANTFLOW_FOUR_EYES": GUARDED_WORKFLOWS, "TENANTFLOW_VERIFIED_APPROVERS": GUARDED_WORKFLOWS}
    with ThreadPoolExecutor(max_workers=2) as pool:
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[
                TenantOnboarding,
                TenantOffboarding,
                TenantHold,
                TenantPlan,
                TenantRecords,
                *([TenantLifecycle] if lifecycle_too else []),
            ],
            activities=[*(world or FakeWorld()).activities(), *lifecycle.ACTIVITIES],
            activity_executor=pool,
            interceptors=[Approvals(approval_rules(WorkerSettings(**guarded | settings)))],
        ):
            yield queue


def bobs_approval(namespace: str, workflow_id: str, run_id: str, plan_hash: str) -> ApprovePlan:
    """``approve_plan`` of ``plan_hash`` by bob, signed with his key for exactly that run: what a raw Temporal
    client (an update or a signal, no tenantflow client) sends when it holds bob's proof."""
    statement = ApprovalStatement(
        namespace=namespace,
        workflow_id=workflow_id,
        run_id=run_id,
        gate="approve_plan",
        plan=plan_hash,
        approver="bob@ops-host",
    )
    proof = session_approvers().signers["bob"].sign(statement)
    return ApprovePlan(plan_hash=plan_hash, approver="bob@ops-host", proof=proof)
