"""The Python API other services call to start runs and answer gates.

Example::

    api = await TenantflowClient.connect()
    handle = await api.start_onboarding(contract)
    status = await api.status(handle.id)
    await api.approve(handle.id, status.plan_hash)

Who it acts as and the proofs its starts and gate answers carry are its base's (:mod:`starter.signing`); the
workflows it reaches, by type and by gate, are :mod:`starter.run_kinds`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.client import WorkflowExecution, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.converter import WorkflowSerializationContext
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.types import MethodAsyncSingleParam
from temporalio.workflow import UpdateMethodMultiParam

from tenantflow.models.change import CHANGE_WORKFLOW, ChangeInput
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import DecommissionResult, EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import ApprovePlan, GateAnswer, RejectPlan, SmokeChoice, SmokeFailedAnswer
from tenantflow.models.lifecycle import LifecycleResult, RenewTerm, TermStatus
from tenantflow.models.offboarding import OffboardingInput, OffboardingResult
from tenantflow.models.onboarding import OnboardingInput, OnboardingResult
from tenantflow.models.run_ids import enrollment_id, lifecycle_id, offboarding_id, onboarding_id
from tenantflow.models.status import RunStatus
from tenantflow.models.tenant import TenantContract
from tenantflow.starter import summaries
from tenantflow.starter.exclusive import running
from tenantflow.starter.run_kinds import (
    DECOMMISSION_RUN,
    ENROLLMENT_RUN,
    RUNS,
    WORKFLOW_TYPES,
    YES_NO_GATES,
    WorkerRun,
)
from tenantflow.starter.signing import SigningClient
from tenantflow.starter.summaries import RunDescription
from tenantflow.workflows.change import TenantChange
from tenantflow.workflows.decommission import WorkerDecommissionWorkflow
from tenantflow.workflows.enrollment import WorkerEnrollmentWorkflow
from tenantflow.workflows.lifecycle import TenantLifecycle
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tenantflow.workflows.search import STAGE, TENANT_SLUG, WORKER_CLUSTER
from tenantflow.workflows.smoke_gate import SMOKE_FAILED

TERM_QUERY_TIMEOUT = timedelta(seconds=10)
"""How long a lifecycle's ``term`` query may wait for a worker to answer (a running lifecycle whose worker is gone
would otherwise hold ``tenantflow tenants`` until the server gives up)."""

T = TypeVar("T")
W = TypeVar("W")
P = TypeVar("P", bound=BaseModel)
R = TypeVar("R")


class RunAlreadyActive(RuntimeError):
    """A run for the same target is already in progress."""


async def _answer(handle: WorkflowHandle[Any, Any], update: UpdateMethodMultiParam[..., Any], *args: Any) -> str:
    """Run the gate update ``update`` of ``handle`` with ``args``: every gate update answers a line of text. (The SDK
    types an ``async`` update declared with ``name=`` as returning its coroutine, so the text is typed here.)"""
    answer: str = await handle.execute_update(update, args=list(args))
    return answer


class TenantflowClient(SigningClient):
    """Thin, typed operations on tenantflow runs."""

    async def _start(
        self,
        run: MethodAsyncSingleParam[W, P, R],
        arg: P,
        workflow_id: str,
        label: tuple[SearchAttributeKey[str], str],
        description: RunDescription,
        started_by: str | None = None,
        rival: str | None = None,
    ) -> WorkflowHandle[W, R]:
        """Start the workflow of ``run`` as ``workflow_id``, labelled with the search attribute ``label`` and the
        stage ``starting``; with ``rival``, the id of a run that must not run at the same time, nothing is started
        while that run runs (:mod:`starter.exclusive`; the runs hold their tenant themselves)."""
        if rival is not None and await running(self.client, rival):
            raise RunAlreadyActive(
                f"{rival} of the same tenant is in progress, so {workflow_id} was not started; wait for it to end "
                f"(`tenantflow status {rival}`) or cancel it first"
            )
        key, value = label
        attributes = TypedSearchAttributes([SearchAttributePair(key, value), SearchAttributePair(STAGE, "starting")])
        memo = await self.start_memo(workflow_id, WORKFLOW_TYPES[run], started_by or self.identity, arg)
        try:
            handle = await self.client.start_workflow(
                run,
                arg,
                id=workflow_id,
                task_queue=self.task_queue,
                search_attributes=attributes,
                memo=memo,
                static_summary=description.summary,
                static_details=description.details,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
        except WorkflowAlreadyStartedError:
            raise RunAlreadyActive(
                f"a run with id {workflow_id} is already in progress; see "
                f"`tenantflow status {workflow_id}` or cancel it first"
            ) from None
        return handle

    async def _start_on_tenant(
        self,
        run: MethodAsyncSingleParam[W, P, R],
        arg: P,
        slug: str,
        describe: Callable[[str], RunDescription],
        on_behalf_of: str | None,
        offboarding: bool = False,
    ) -> WorkflowHandle[W, R]:
        """Start ``run`` with ``arg`` on the tenant ``slug``, labelled with it and described by ``describe`` of who
        started it: this client, or ``on_behalf_of``. A tenant's onboarding or change (``tenant/<slug>``) and its
        offboarding (``offboard/<slug>``) never run at the same time: neither is started while the other runs, and
        of two started together the tenant's hold lets one run (``workflows/tenant_hold.py``)."""
        starter = self._approver(on_behalf_of)
        workflow_id, rival = onboarding_id(slug), offboarding_id(slug)
        if offboarding:
            workflow_id, rival = rival, workflow_id
        return await self._start(run, arg, workflow_id, (TENANT_SLUG, slug), describe(starter), starter, rival=rival)

    async def start_onboarding(
        self, contract: TenantContract, on_behalf_of: str | None = None, **options: Any
    ) -> WorkflowHandle[TenantOnboarding, OnboardingResult]:
        """Start onboarding ``contract``, recorded as started by this client (or by ``on_behalf_of``)."""
        arg = OnboardingInput(contract=contract, **options)
        describe = partial(summaries.onboarding, contract)
        return await self._start_on_tenant(TenantOnboarding.run, arg, contract.slug, describe, on_behalf_of)

    async def start_change(
        self, contract: TenantContract, previous: TenantContract, on_behalf_of: str | None = None, **options: Any
    ) -> WorkflowHandle[TenantChange, OnboardingResult]:
        """Change the onboarded tenant ``previous`` to ``contract`` (``TenantChange``, id ``tenant/<slug>``),
        recorded as started by this client (or by ``on_behalf_of``)."""
        arg = ChangeInput(contract=contract, previous=previous, **options)
        describe = partial(summaries.change, contract, previous)
        return await self._start_on_tenant(TenantChange.run, arg, contract.slug, describe, on_behalf_of)

    async def start_offboarding(
        self, contract: TenantContract, purge_data: bool = False, on_behalf_of: str | None = None
    ) -> WorkflowHandle[TenantOffboarding, OffboardingResult]:
        """Start offboarding ``contract``, recorded as started by this client (or by ``on_behalf_of``)."""
        arg = OffboardingInput(contract=contract, purge_data=purge_data)
        describe = partial(summaries.offboarding, contract, purge_data)
        return await self._start_on_tenant(
            TenantOffboarding.run, arg, contract.slug, describe, on_behalf_of, offboarding=True
        )

    async def _start_on_worker(
        self, kind: WorkerRun[W, P, R], contract: WorkerEnrollment, on_behalf_of: str | None, options: dict[str, Any]
    ) -> WorkflowHandle[W, R]:
        """Start a ``kind`` run on ``contract``'s worker cluster (its input of the contract and ``options``), labelled
        with the worker cluster, recorded as started by this client (or by ``on_behalf_of``)."""
        starter = self._approver(on_behalf_of)
        return await self._start(
            kind.run,
            kind.input(contract=contract, **options),
            kind.workflow_id(contract.tenant_namespace, contract.worker_name),
            (WORKER_CLUSTER, contract.worker_name),
            kind.describe(contract, starter),
            starter,
        )

    async def start_enrollment(
        self, contract: WorkerEnrollment, on_behalf_of: str | None = None, **options: Any
    ) -> WorkflowHandle[WorkerEnrollmentWorkflow, EnrollmentResult]:
        """Start enrolling ``contract``'s worker, recorded as started by this client (or by ``on_behalf_of``)."""
        return await self._start_on_worker(ENROLLMENT_RUN, contract, on_behalf_of, options)

    async def start_decommission(
        self, contract: WorkerEnrollment, on_behalf_of: str | None = None, **options: Any
    ) -> WorkflowHandle[WorkerDecommissionWorkflow, DecommissionResult]:
        """Start decommissioning ``contract``'s worker, recorded as started by this client (or by ``on_behalf_of``)."""
        return await self._start_on_worker(DECOMMISSION_RUN, contract, on_behalf_of, options)

    async def _started_input(self, workflow_id: str, input_type: type[T]) -> T:
        """The input the latest run of ``workflow_id`` was started with."""
        history = await self.handle(workflow_id).fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        context = WorkflowSerializationContext(namespace=self.client.namespace, workflow_id=workflow_id)
        converter = self.client.data_converter.with_context(context)
        [params] = await converter.decode(started.input.payloads, [input_type])
        decoded: T = params
        return decoded

    async def enrolled_contract(self, namespace: str, workercluster: str) -> WorkerEnrollment:
        """The contract the latest enrollment run of ``namespace/workercluster`` was started with."""
        return (await self._started_input(enrollment_id(namespace, workercluster), EnrollmentInput)).contract

    async def onboarded_contract(self, slug: str) -> TenantContract:
        """The contract the latest onboarding (or change) run of ``slug`` was started with."""
        workflow_id = onboarding_id(slug)
        if (await self.handle(workflow_id).describe()).workflow_type == CHANGE_WORKFLOW:
            return (await self._started_input(workflow_id, ChangeInput)).contract
        return (await self._started_input(workflow_id, OnboardingInput)).contract

    async def status(self, workflow_id: str) -> RunStatus:
        """The run's ``status`` query: every workflow answers one of this name and type (the onboarding's)."""
        return await self.handle(workflow_id).query(TenantOnboarding.status)

    async def running(self, workflow_id: str) -> bool:
        described = await self.handle(workflow_id).describe()
        return described.status == WorkflowExecutionStatus.RUNNING

    async def wait_for_plan(self, workflow_id: str, timeout_s: float = 300) -> RunStatus:
        """Poll ``status`` until the plan is published; raise the run's failure if it ends first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            status = await self.status(workflow_id)
            if status.plan_hash:
                return status
            if not await self.running(workflow_id):
                await self.result(workflow_id)
                return status
            if loop.time() > deadline:
                raise TimeoutError(f"no plan from {workflow_id} after {timeout_s}s")
            await asyncio.sleep(0.2)

    async def approve(
        self, workflow_id: str, plan_hash: str, comment: str = "", on_behalf_of: str | None = None
    ) -> str:
        """Approve the plan ``plan_hash``, recorded as approved by this client's identity (or ``on_behalf_of``)."""
        approver, handle = self._approver(on_behalf_of), await self._gate_handle(workflow_id)
        proof = await self._proof(handle, "approve_plan", approver, plan_hash)
        approval = ApprovePlan(plan_hash=plan_hash, approver=approver, comment=comment, proof=proof)
        return await _answer(handle, TenantOnboarding.approve_plan, approval)

    async def reject(self, workflow_id: str, reason: str, on_behalf_of: str | None = None) -> str:
        approver, handle = self._approver(on_behalf_of), await self._gate_handle(workflow_id)
        proof = await self._proof(handle, "approve_plan", approver, decision="reject")
        rejection = RejectPlan(reason=reason, approver=approver, proof=proof)
        return await _answer(handle, TenantOnboarding.reject_plan, rejection)

    async def answer_gate(self, workflow_id: str, gate: str, comment: str = "", on_behalf_of: str | None = None) -> str:
        """Answer one of a run's yes/no gates through the update of the gate's own name, recorded as answered by
        this client's identity (or ``on_behalf_of``). A name that is no yes/no gate goes to the run's generic
        ``answer_gate`` update, which refuses it naming the run's gates."""
        approver, handle = self._approver(on_behalf_of), await self._gate_handle(workflow_id)
        yes = GateAnswer(approver=approver, comment=comment, proof=await self._proof(handle, gate, approver))
        if gate in YES_NO_GATES:
            return await _answer(handle, YES_NO_GATES[gate], yes)
        return await _answer(handle, TenantOnboarding.answer_gate, gate, yes)

    async def answer_smoke_failed(
        self,
        workflow_id: str,
        choice: SmokeChoice,
        reason: str = "",
        on_behalf_of: str | None = None,
        opened_at: datetime | None = None,
    ) -> str:
        """Answer an onboarding's ``smoke_failed`` gate: ``rerun`` the smoke checks (after fixing the node or chart),
        ``rollback`` the tenant, or ``waive`` the failures for ``reason`` (needed, recorded on the handover sheet);
        recorded as answered by this client's identity (or ``on_behalf_of``), the proof signing the choice and the
        gate's opening it answers: ``opened_at`` (the one its caller was shown), else the one ``status`` lists now."""
        approver, handle = self._approver(on_behalf_of), await self._gate_handle(workflow_id)
        if opened_at is None:
            status: RunStatus = await handle.query(TenantOnboarding.status)
            opened_at = next((g.opened_at for g in status.gates if g.name == SMOKE_FAILED), None)
        answer = SmokeFailedAnswer(approver=approver, choice=choice, comment=reason, opened_at=opened_at)
        proof = await self._proof(handle, SMOKE_FAILED, approver, answer.signed)
        return await _answer(handle, TenantOnboarding.smoke_failed, answer.model_copy(update={"proof": proof}))

    async def term(self, slug: str) -> TermStatus | None:
        """Where the term of ``slug`` stands: a running lifecycle's ``term`` query, an ended one's result (no worker
        needed); None when it has none, or it was terminated."""
        handle = self.client.get_workflow_handle(lifecycle_id(slug), result_type=LifecycleResult)
        try:
            described = await handle.describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        if described.status == WorkflowExecutionStatus.RUNNING:
            return await handle.query(TenantLifecycle.term, rpc_timeout=TERM_QUERY_TIMEOUT)
        if described.status != WorkflowExecutionStatus.COMPLETED:
            return None
        ended = await handle.result()
        return TermStatus(
            tenant=slug, stage=f"term:{ended.status}", term_end=ended.term_end, offboarding=ended.offboarding
        )

    async def renew(self, slug: str, days: int, comment: str = "", on_behalf_of: str | None = None) -> TermStatus:
        """Extend the term of ``slug`` by ``days`` (the lifecycle's ``renew`` update; it refuses days < 1), recorded
        as approved by this client's identity (or ``on_behalf_of``)."""
        approver, handle = self._approver(on_behalf_of), await self._gate_handle(lifecycle_id(slug))
        proof = await self._proof(handle, "renew", approver, f"days={days}", "request")
        renewal = RenewTerm(days=days, approver=approver, comment=comment, proof=proof)
        lifecycle = self.client.get_workflow_handle(handle.id, run_id=handle.run_id, result_type=LifecycleResult)
        return await lifecycle.execute_update(TenantLifecycle.renew, renewal)

    async def cancel(self, workflow_id: str) -> None:
        await self.handle(workflow_id).cancel()

    async def result(self, workflow_id: str, result_type: type | None = None) -> Any:
        """Wait for a run's result, decoded as ``result_type``, by default as its workflow's run method returns
        it (a workflow type the client does not start: as an onboarding's)."""
        if result_type is not None:
            return await self.client.get_workflow_handle(workflow_id, result_type=result_type).result()
        described = await self.handle(workflow_id).describe()
        run = RUNS.get(described.workflow_type, TenantOnboarding.run)
        return await self.client.get_workflow_handle_for(run, workflow_id).result()

    async def result_unless_waiting(
        self,
        workflow_id: str,
        at: Collection[str],
        watch: Callable[[RunStatus], None] | None = None,
        refresh_s: float = 0.5,
    ) -> Any:
        """The run's result (as :meth:`result`), or its status as soon as it waits at one of the gates ``at``: a run
        stopped for the operator (``smoke_failed``), which waiting longer would not end. ``watch`` is shown every
        status read (polled every ``refresh_s`` while the run goes on, only with ``at`` or ``watch``)."""
        if not at and watch is None:
            return await self.result(workflow_id)
        result = asyncio.ensure_future(self.result(workflow_id))
        try:
            while not result.done():
                current = await self.status(workflow_id)
                if watch is not None:
                    watch(current)
                if any(gate.name in at for gate in current.gates):
                    return current
                await asyncio.wait([result], timeout=refresh_s)
            return result.result()
        finally:
            result.cancel()

    async def list_runs(
        self, query: str = "", limit: int = 100, keep: Callable[[WorkflowExecution], bool] | None = None
    ) -> list[WorkflowExecution]:
        """The first ``limit`` runs ``query`` finds, newest first; with ``keep``, the first ``limit`` it keeps."""
        runs: list[WorkflowExecution] = []
        async for execution in self.client.list_workflows(query or None, limit=None if keep else limit):
            if keep is None or keep(execution):
                runs.append(execution)
            if len(runs) == limit:
                break
        return runs
