"""Approvals as the handover sheet and the records show them; record keys and payloads (Helm's release encoding)."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.gates import Approval, SmokeFailedAnswer
from tenantflow.models.onboarding import Handover
from tenantflow.models.records import (
    RecordKey,
    RecordKind,
    RunStamp,
    TenantRecord,
    WorkerClusterRecord,
    decode_payload,
    encode_payload,
)
from tenantflow.models.results import Finding
from tenantflow.models.targets import KubeTarget
from tests.unit.tenants import tenant

AT = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
APPROVED = Approval(gate="approve_plan", approver="alice", at=AT, plan_hash="abc123")
REJECTED = Approval(gate="approve_purge", approver="bob", at=AT, approved=False)
SHEET = Handover(markdown="# Handover\n\nlogin: ssh\n\n", sheet={"a": 1}, capacity_contract={"gpus": 64})
STAMP = RunStamp(workflow_id="tenant/tenant-foo", run_id="r1", plan_hash="abc123", approver="alice", recorded_at=AT)
WORKER = WorkerEnrollment.model_validate(
    yaml.safe_load((Path(__file__).resolve().parents[3] / "examples" / "worker-forecasting-us.yaml").read_text())
)


def test_an_approval_says_what_was_answered_with_which_plan_by_whom_and_when() -> None:
    assert APPROVED.describe() == "approve_plan approved (plan abc123) by alice at 2026-03-04 05:06:07Z"
    assert REJECTED.describe() == "approve_purge rejected by bob at 2026-03-04 05:06:07Z"


def test_the_handover_sheet_lists_the_approvals_last() -> None:
    assert SHEET.with_approvals([]) is SHEET
    signed = SHEET.with_approvals([APPROVED, REJECTED])
    assert signed.approvals == [APPROVED, REJECTED]
    assert signed.markdown == (
        "# Handover\n\nlogin: ssh\n\n## Approvals\n\n"
        "- approve_plan approved (plan abc123) by alice at 2026-03-04 05:06:07Z\n"
        "- approve_purge rejected by bob at 2026-03-04 05:06:07Z\n"
    )
    assert (signed.sheet, signed.capacity_contract) == (SHEET.sheet, SHEET.capacity_contract)


def test_a_smoke_waiver_is_on_the_sheet_with_each_finding_its_fix_who_and_why() -> None:
    waiver = Approval(gate="smoke_failed", approver="bob", at=AT, comment="ACS fix is scheduled")
    finding = Finding.failed("smoke.nccl", "busbw 65 GB/s", "run the ACS disable runbook")
    waived = SHEET.with_waiver([finding], waiver)
    by = "smoke_failed approved by bob at 2026-03-04 05:06:07Z"
    assert waived.markdown == (
        "# Handover\n\nlogin: ssh\n\n## Smoke checks waived\n\n"
        "- smoke.nccl: busbw 65 GB/s (fix: run the ACS disable runbook)\n\n"
        f"Waived ({by}): ACS fix is scheduled\n"
    )
    entry = {"check": "smoke.nccl", "message": "busbw 65 GB/s", "fix": "run the ACS disable runbook"}
    assert waived.sheet == {"a": 1, "smoke_waived": [entry | {"by": by, "reason": "ACS fix is scheduled"}]}


def test_a_smoke_failed_answer_signs_its_choice_and_a_waiver_needs_a_reason() -> None:
    assert SmokeFailedAnswer().signed == "choice=rerun"
    assert SmokeFailedAnswer(choice="rollback").signed == "choice=rollback"
    assert SmokeFailedAnswer(choice="waive", comment="accepted by the tenant").signed == "choice=waive"
    at_opening = SmokeFailedAnswer(choice="waive", comment="accepted", opened_at=AT)
    assert at_opening.signed == "choice=waive opened_at=2026-03-04T05:06:07+00:00", "the proof binds the opening"
    assert "opened_at" not in SmokeFailedAnswer().model_dump(), "an answer without it serializes as before"
    with pytest.raises(ValidationError, match="a waiver needs a reason"):
        SmokeFailedAnswer(choice="waive", comment="  ")


def test_approvals_are_left_out_of_a_payload_only_while_there_are_none() -> None:
    assert "approvals" not in SHEET.model_dump()
    assert SHEET.with_approvals([APPROVED]).model_dump()["approvals"][0]["approver"] == "alice"
    assert "approvals" not in STAMP.model_dump()


def test_a_record_key_names_the_secret_of_a_tenant_or_a_worker() -> None:
    target = KubeTarget(context="tenant-cluster")
    key = RecordKey.of_tenant(target, "tenant-foo")
    assert (key.kind, key.target, key.tenant, key.stem) == (
        RecordKind.tenant,
        target,
        "tenant-foo",
        "tenantflow.tenant.tenant-foo",
    )
    worker = RecordKey.of_workercluster(KubeTarget(context="worker"), "forecasting", "forecasting-us")
    assert (worker.kind, worker.hub_namespace, worker.worker) == (
        RecordKind.workercluster,
        "forecasting",
        "forecasting-us",
    )
    assert worker.stem == "tenantflow.worker.forecasting.forecasting-us"
    contract = tenant()
    assert RecordKey.of(TenantRecord(contract=contract, run=STAMP)) == RecordKey.of_tenant(
        contract.cluster, "tenant-foo"
    )
    assert RecordKey.of(WorkerClusterRecord(contract=WORKER, run=STAMP)) == RecordKey.of_workercluster(
        WORKER.worker, "forecasting", "forecasting-us"
    )


def test_a_record_payload_is_gzipped_json_in_base64_as_helm_stores_a_release() -> None:
    record = TenantRecord(contract=tenant(), run=STAMP)
    encoded = encode_payload(record)
    raw = base64.b64decode(encoded, validate=True)
    assert raw[:2] == b"\x1f\x8b", "gzip's magic number"
    assert json.loads(gzip.decompress(raw)) == json.loads(record.model_dump_json())
    assert decode_payload(encoded) == record.model_dump_json().encode()
