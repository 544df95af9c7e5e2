"""The encrypting payload codec: round trip, rotation, tampering, payloads bound to their workflow, the UI codec
endpoint (which does not encrypt gate answers), and no plaintext in history."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import uuid
from pathlib import Path

import httpx
import pytest
from aiohttp.test_utils import TestServer
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import ActivitySerializationContext, WorkflowSerializationContext
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.gates import ApprovePlan, GateAnswer, SmokeFailedAnswer
from tenantflow.models.lifecycle import LifecycleResult, RenewTerm
from tenantflow.models.offboarding import OffboardingResult
from tenantflow.models.run_ids import lifecycle_id
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.codec import (
    BINDING,
    KEY_ID,
    CodecError,
    EncryptionCodec,
    EncryptionRequired,
    KeyRing,
    data_converter,
    new_key_entry,
)
from tenantflow.worker.codec_server import codec_app
from tenantflow.worker.config import TemporalSettings
from tenantflow.worker.temporal import connect
from tenantflow.worker.tokens import TokenTable, new_token
from tests.approvers import session_approvers
from tests.security.four_eyes import four_eyes_worker
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage
from tests.workflows.lifecycle_harness import wait_renewed

UI = "http://localhost:8233"


def ring(*ids: str) -> KeyRing:
    return KeyRing.parse([new_key_entry(key_id) for key_id in ids])


def payload(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


async def test_round_trip_hides_the_plaintext() -> None:
    codec = EncryptionCodec(ring("k1"))
    original = payload('{"email": "alice@tenant-foo.example"}')
    [sealed] = await codec.encode([original])
    assert b"alice" not in sealed.SerializeToString()
    assert sealed.metadata[KEY_ID] == b"k1"
    assert await codec.decode([sealed]) == [original]
    [again] = await codec.encode([original])
    assert again.data != sealed.data, "a fresh nonce for every payload"


async def test_rotation_decrypts_old_keys_and_encrypts_with_the_newest() -> None:
    old = ring("2024-01")
    [sealed_old] = await EncryptionCodec(old).encode([payload("old")])
    rotated = KeyRing(old.keys + ring("2025-01").keys)
    codec = EncryptionCodec(rotated)
    assert await codec.decode([sealed_old]) == [payload("old")]
    [sealed_new] = await codec.encode([payload("new")])
    assert sealed_new.metadata[KEY_ID] == b"2025-01"
    with pytest.raises(CodecError, match="unknown codec key id '2025-01'"):
        await EncryptionCodec(old).decode([sealed_new])


async def test_tampering_and_wrong_keys_are_refused() -> None:
    codec = EncryptionCodec(ring("k1"))
    [sealed] = await codec.encode([payload("secret")])
    flipped = Payload(metadata=dict(sealed.metadata), data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(CodecError, match="failed authentication"):
        await codec.decode([flipped])
    relabelled = Payload(metadata={**sealed.metadata, KEY_ID: b"k2"}, data=sealed.data)
    with pytest.raises(CodecError, match="failed authentication"):
        await EncryptionCodec(KeyRing(codec.ring.keys + ring("k2").keys)).decode([relabelled])
    same_id_other_key = EncryptionCodec(ring("k1"))
    with pytest.raises(CodecError, match="failed authentication"):
        await same_id_other_key.decode([sealed])


def test_bad_key_material_is_refused() -> None:
    with pytest.raises(CodecError, match="32 bytes"):
        KeyRing.parse([f"k1:{base64.b64encode(b'short').decode()}"])
    with pytest.raises(CodecError, match="unique"):
        KeyRing.parse([new_key_entry("k1"), new_key_entry("k1")])
    with pytest.raises(CodecError, match="KEY_ID:BASE64_KEY"):
        KeyRing.parse(["no-separator"])
    with pytest.raises(CodecError, match="empty"):
        KeyRing.parse(["# only a comment"])


def test_keys_from_file_or_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "codec.keys"
    key_file.write_text(f"# rotated yearly\n{new_key_entry('a')}\n{new_key_entry('b')}\n")
    assert KeyRing.from_env(key_file).current[0] == "b"  # type: ignore[union-attr]
    monkeypatch.delenv("TENANTFLOW_CODEC_KEYS", raising=False)
    assert KeyRing.from_env(None) is None
    monkeypatch.setenv("TENANTFLOW_CODEC_KEYS", f"{new_key_entry('x')},{new_key_entry('y')}")
    assert KeyRing.from_env(None).current[0] == "y"  # type: ignore[union-attr]


async def test_plaintext_is_refused_when_encryption_is_required() -> None:
    plain = payload('{"approver": "mallory"}')
    with pytest.raises(CodecError, match="plaintext payload refused: encryption is required"):
        await EncryptionCodec(ring("k1")).decode([plain])
    assert await EncryptionCodec(ring("k1"), allow_plaintext=True).decode([plain]) == [plain]


def sealed_for(namespace: str, workflow_id: str) -> WorkflowSerializationContext:
    return WorkflowSerializationContext(namespace=namespace, workflow_id=workflow_id)


async def test_a_payload_sealed_for_one_workflow_is_refused_in_another() -> None:
    codec = EncryptionCodec(ring("k1"))
    approval = payload('{"plan_hash": "0123456789abcdef", "approver": "bob"}')
    [sealed] = await codec.with_context(sealed_for("default", "tenant/run-a")).encode([approval])
    assert sealed.metadata[BINDING] == b'["default", "tenant/run-a"]'
    assert await codec.with_context(sealed_for("default", "tenant/run-a")).decode([sealed]) == [approval]
    activity = ActivitySerializationContext(
        namespace="default",
        activity_id="1",
        activity_type="kube.quota",
        activity_task_queue="q",
        workflow_id="tenant/run-a",
        workflow_type="TenantOnboarding",
        is_local=False,
    )
    assert await codec.with_context(activity).decode([sealed]) == [approval], "an activity of the same workflow"
    for namespace, workflow_id in (("default", "tenant/run-b"), ("other", "tenant/run-a")):
        with pytest.raises(CodecError, match="payload sealed for \\('default', 'tenant/run-a'\\) refused"):
            await codec.with_context(sealed_for(namespace, workflow_id)).decode([sealed])
    assert await codec.decode([sealed]) == [approval], "the codec server (no context) reads the binding it carries"
    moved = Payload(metadata={**sealed.metadata, BINDING: b'["default", "tenant/run-b"]'}, data=sealed.data)
    unbound = Payload(metadata={k: v for k, v in sealed.metadata.items() if k != BINDING}, data=sealed.data)
    for forged in (moved, unbound):
        with pytest.raises(CodecError, match="failed authentication"):
            await codec.decode([forged])
    [old] = await codec.encode([approval])
    assert BINDING not in old.metadata, "sealed without a context (the codec server; before the binding existed)"
    assert await codec.with_context(sealed_for("default", "tenant/run-b")).decode([old]) == [approval]


PREVIOUS_FORMAT = Payload(
    metadata={"encoding": b"binary/encrypted", KEY_ID: b"k2025"},
    data=base64.b64decode(
        "+5o2Z8D51/ecTSXmq4jh4qN+OGfRGHrD8bDqn0vFxK8EBSS748OF2etAWTPhMceWyIRdk98rfm4nPrt4GAY+JHu/KJogBDRKTQ0Cosfb"
        "xEBirBTDPpEclIH7"
    ),
)
"""``{"contract": {"slug": "tenant-old"}}`` sealed by the codec before payloads were bound to their workflow (commit
542481b^, key ``k2025`` below): AES-GCM with the key id alone as associated data, no binding in the metadata."""
PREVIOUS_KEY = "k2025:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="


async def test_a_payload_sealed_before_the_binding_still_decodes_and_a_tampered_one_is_refused() -> None:
    codec = EncryptionCodec(KeyRing.parse([PREVIOUS_KEY, new_key_entry("k2026")]))
    expected = payload('{"contract": {"slug": "tenant-old"}}')
    assert await codec.decode([PREVIOUS_FORMAT]) == [expected], "the codec server"
    assert await codec.with_context(sealed_for("default", "tenant/tenant-old")).decode([PREVIOUS_FORMAT]) == [expected]
    binding = {BINDING: b'["default", "tenant/tenant-old"]'}
    bound = Payload(metadata={**PREVIOUS_FORMAT.metadata, **binding}, data=PREVIOUS_FORMAT.data)
    with pytest.raises(CodecError, match="key 'k2025' failed authentication"):
        await codec.decode([bound])
    with pytest.raises(CodecError, match="unknown codec key id 'k2025'"):
        await EncryptionCodec(ring("k2026")).decode([PREVIOUS_FORMAT])


def test_encryption_required_without_keys_is_refused_naming_the_setting() -> None:
    with pytest.raises(EncryptionRequired, match="TENANTFLOW_REQUIRE_ENCRYPTION=true but no codec key"):
        data_converter(None, require=True)
    assert data_converter(None).payload_codec is None
    assert isinstance(data_converter(ring("k1"), require=True).payload_codec, EncryptionCodec)


TOKEN, TOKEN_LINE = new_token("ui-user", ["requester:*"])  # /encode needs requester over every target


async def test_the_codec_endpoint_does_not_encrypt_gate_answers() -> None:
    codec = EncryptionCodec(ring("ui"))
    answers = [
        ApprovePlan(plan_hash="0123456789abcdef", approver="bob"),
        GateAnswer(),
        RenewTerm(days=3650),
        SmokeFailedAnswer(choice="waive", comment="known bad node", approver="bob"),
        {"reason": "no", "approver": "bob"},
        {"choice": "rerun", "approver": "bob"},
        {"choice": "waive", "approver": "bob"},  # the run would refuse it (no reason); still not sealed
    ]
    async with TestServer(codec_app(codec, [UI], TokenTable.parse([TOKEN_LINE]))) as server:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=str(server.make_url("/")), headers=auth) as http:
            for answer in answers:
                text = answer.model_dump_json() if not isinstance(answer, dict) else json.dumps(answer)
                body = json_format.MessageToJson(Payloads(payloads=[payload('"tenant/x"'), payload(text)]))
                refused = await http.post("/encode", content=body)
                assert refused.status_code == 403, (answer, refused.text)
                assert "does not encrypt gate answers" in refused.json()["error"]
                assert "binary/encrypted" not in refused.text
            contract = json.dumps({"contract": {"slug": "tenant-x"}})
            body = json_format.MessageToJson(Payloads(payloads=[payload(contract), payload('"tenant/x"')]))
            assert (await http.post("/encode", content=body)).status_code == 200, "other payloads are encrypted"


async def test_codec_endpoint_without_credentials_answers_401() -> None:
    codec = EncryptionCodec(ring("ui"))
    [sealed] = await codec.encode([payload('"secret"')])
    body = json_format.MessageToJson(Payloads(payloads=[sealed]))
    server = TestServer(codec_app(codec, [UI], TokenTable.parse([TOKEN_LINE])))
    async with server, httpx.AsyncClient(base_url=str(server.make_url("/"))) as http:
        for path in ("/decode", "/encode"):
            anonymous = await http.post(path, content=body, headers={"Origin": UI})
            assert anonymous.status_code == 401 and "secret" not in anonymous.text
            assert anonymous.headers["Access-Control-Allow-Origin"] == UI, "the UI can read the 401"
            wrong = await http.post(path, content=body, headers={"Authorization": "Bearer guess"})
            assert wrong.status_code == 401
            bare = await http.post(path, content=body, headers={"Authorization": TOKEN})
            assert bare.status_code == 401 and "Bearer" in bare.json()["error"], "the scheme is required"
        allowed = await http.post("/decode", content=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert allowed.status_code == 200
        assert base64.b64decode(allowed.json()["payloads"][0]["data"]) == b'"secret"'


async def test_codec_endpoint_speaks_the_remote_codec_protocol_with_cors() -> None:
    codec = EncryptionCodec(ring("ui"))
    async with TestServer(codec_app(codec, [UI], TokenTable.parse([TOKEN_LINE]))) as server:
        base = str(server.make_url("/"))
        body = json_format.MessageToJson(Payloads(payloads=[payload('"hello"')]))
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            pre = await http.options("/decode", headers={"Origin": UI, "Access-Control-Request-Method": "POST"})
            assert pre.status_code == 200 and pre.headers["Access-Control-Allow-Origin"] == UI
            assert "X-Namespace" in pre.headers["Access-Control-Allow-Headers"]
            foreign = await http.options("/decode", headers={"Origin": "http://evil.example"})
            assert foreign.status_code == 403 and "Access-Control-Allow-Origin" not in foreign.headers
            encoded = await http.post("/encode", content=body, headers={"Origin": UI, "X-Namespace": "default"})
            assert encoded.status_code == 200, encoded.text
            assert encoded.headers["Access-Control-Allow-Origin"] == UI
            sealed = encoded.json()["payloads"][0]
            assert base64.b64decode(sealed["metadata"]["encoding"]) == b"binary/encrypted"
            decoded = await http.post("/decode", json=encoded.json(), headers={"Origin": UI})
            assert base64.b64decode(decoded.json()["payloads"][0]["data"]) == b'"hello"'
            sealed["data"] = base64.b64encode(b"\0" * 40).decode()
            tampered = await http.post("/decode", json={"payloads": [sealed]}, headers={"Origin": UI})
            assert tampered.status_code == 400 and "failed authentication" in tampered.json()["error"]


def payload_texts(history_json: str) -> str:
    """The raw history plus every base64 field in it decoded."""
    parts = [history_json]
    for value in re.findall(r'"(?:data|payload)": "([A-Za-z0-9+/=]+)"', history_json):
        parts.append(base64.b64decode(value).decode(errors="replace"))
    return "\n".join(parts)


async def test_history_recorded_with_the_codec_has_no_plaintext_input(
    dev_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file = tmp_path / "codec.keys"
    key_file.write_text(new_key_entry("test") + "\n")
    address = dev_env.client.service_client.config.target_host
    monkeypatch.setenv("TENANTFLOW_CODEC_KEY_FILE", str(key_file))
    settings = TemporalSettings(TEMPORAL_ADDRESS=address)
    encrypted = await connect(settings)
    assert isinstance(encrypted.data_converter.payload_codec, EncryptionCodec)
    env = WorkflowEnvironment.from_client(encrypted)
    contract = example_tenant("tenant-sealed")
    email = contract.users[0].email
    ssh_key = contract.users[0].ssh_keys[0].split()[1]
    async with fake_worker(env, FakeWorld()) as api:
        handle = await api.start_onboarding(contract)
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await api.approve(handle.id, status.plan_hash)
        result = await handle.result()
    assert result.status == "completed"
    history = await encrypted.get_workflow_handle(handle.id).fetch_history()
    raw = payload_texts(history.to_json())
    assert "tenant-sealed" in raw, "the search attribute stays readable (it is not a payload)"
    assert email not in raw and ssh_key not in raw
    sealed = [
        p
        for e in history.events
        if e.HasField("workflow_execution_started_event_attributes")
        for p in e.workflow_execution_started_event_attributes.input.payloads
    ]
    assert sealed and all(p.metadata["encoding"] == b"binary/encrypted" for p in sealed)
    [opened] = await EncryptionCodec(KeyRing.load(key_file)).decode(sealed)
    assert email in opened.data.decode()


async def test_every_path_of_a_tenants_life_decodes_the_payloads_bound_to_it(
    dev_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Onboarding, its lifecycle (a child), a renewal and its approval, the continue-as-new, an offboarding and
    its signal to the lifecycle: every payload crosses with its workflow's binding, and each is decoded where it
    belongs."""
    key_file = tmp_path / "codec.keys"
    key_file.write_text(new_key_entry("test") + "\n")
    monkeypatch.setenv("TENANTFLOW_CODEC_KEY_FILE", str(key_file))
    encrypted = await connect(TemporalSettings(TEMPORAL_ADDRESS=dev_env.client.service_client.config.target_host))
    env = WorkflowEnvironment.from_client(encrypted)
    contract = example_tenant(f"tenant-b{uuid.uuid4().hex[:6]}")
    async with four_eyes_worker(env, FakeWorld(present=True), lifecycle_too=True) as queue:
        alice = TenantflowClient(encrypted, queue, session_approvers().signers["alice"], "alice@ops-host")
        bob = TenantflowClient(encrypted, queue, session_approvers().signers["bob"], "bob@ops-host")
        onboarding = await alice.start_onboarding(contract)
        await bob.approve(onboarding.id, (await alice.wait_for_plan(onboarding.id)).plan_hash or "")
        assert (await onboarding.result()).status == "completed"
        asked = await alice.renew(contract.slug, 30)
        await bob.approve(lifecycle_id(contract.slug), asked.pending_renewal.plan_hash if asked.pending_renewal else "")
        await wait_renewed(bob, contract.slug)
        offboarding = await alice.start_offboarding(contract)
        await bob.approve(offboarding.id, (await alice.wait_for_plan(offboarding.id)).plan_hash or "")
        assert (await bob.result(offboarding.id, OffboardingResult)).status == "completed"
        ended = await asyncio.wait_for(bob.result(lifecycle_id(contract.slug), LifecycleResult), 60)
    assert ended.status == "offboarded"
    for workflow_id in (onboarding.id, lifecycle_id(contract.slug), offboarding.id):
        history = await encrypted.get_workflow_handle(workflow_id).fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes.input.payloads
        assert [json.loads(p.metadata[BINDING]) for p in started] == [["default", workflow_id]]
