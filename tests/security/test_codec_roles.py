"""The codec server checks the token's roles, over a real socket with the token file on disk as ``codec-server``
reads it: ``/decode`` opens a payload only for a token with a role over the tenant (or worker cluster) of the
workflow the payload is sealed for, and a payload sealed for no workflow, or for a workflow of no tenant, only for
a grant over ``*``; ``/encode`` (whose payloads are bound to no workflow, so valid in any) needs requester or admin
over ``*``. The sealed payloads are those of a real onboarding's history on the dev server, sealed by the SDK with
its serialization context.

The rule, as the README's "Who may call the API" states it for the HTTP API: a viewer of ``tenant-a*`` reads
tenant-a's runs and no other's; a run of no tenant or worker cluster is covered only by ``*``.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest_asyncio
from aiohttp.test_utils import TestServer
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client
from temporalio.converter import WorkflowSerializationContext
from temporalio.testing import WorkflowEnvironment

from tenantflow.worker.codec import BINDING, EncryptionCodec, KeyRing, data_converter, new_key_entry
from tenantflow.worker.codec_server import codec_app
from tenantflow.worker.tokens import TokenFile, new_token
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

UI = "http://localhost:8080"
TOKENS = {
    "tess": ["viewer:tenant-a*"],
    "bo": ["approver:tenant-b*"],
    "wanda": ["admin:workerclusters/*"],
    "vera": ["viewer:*"],
    "alice": ["requester:tenant-a*"],
    "rita": ["requester:*"],
    "root": ["admin:*"],
}
MADE = {user: new_token(user, grants) for user, grants in TOKENS.items()}
RING = KeyRing.parse([new_key_entry("k1")])


def auth(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {MADE[user][0]}"}


async def seal(text: bytes, workflow_id: str | None) -> Payload:
    """The JSON ``text`` sealed for the workflow ``workflow_id`` of namespace ``default`` (None: for none)."""
    codec = EncryptionCodec(RING)
    if workflow_id is not None:
        codec = codec.with_context(WorkflowSerializationContext(namespace="default", workflow_id=workflow_id))
    [sealed] = await codec.encode([Payload(metadata={"encoding": b"json/plain"}, data=text)])
    return sealed


def body(*payloads: Payload) -> str:
    return json_format.MessageToJson(Payloads(payloads=payloads))


@pytest_asyncio.fixture
async def codec_http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The codec server (keys :data:`RING`) over a socket, reading the token file of every user of :data:`TOKENS`."""
    token_file = tmp_path / "api-tokens"
    token_file.write_text("".join(f"{line}\n" for _, line in MADE.values()))
    server = TestServer(codec_app(EncryptionCodec(RING), [UI], TokenFile(token_file)))
    async with server, httpx.AsyncClient(base_url=str(server.make_url("/"))) as http:
        yield http


async def sealed_onboarding_input(env: WorkflowEnvironment, slug: str) -> tuple[Payload, str]:
    """The started event's input of an onboarding of ``slug`` run with the codec, and a user's email in it."""
    target = env.client.service_client.config.target_host
    encrypted = await Client.connect(target, namespace=env.client.namespace, data_converter=data_converter(RING))
    contract = example_tenant(slug)
    async with fake_worker(WorkflowEnvironment.from_client(encrypted), FakeWorld()) as api:
        handle = await api.start_onboarding(contract)
        await wait_for_stage(api, handle, "gate:approve_plan")
        await handle.terminate("test over")
    history = await handle.fetch_history()
    [sealed] = history.events[0].workflow_execution_started_event_attributes.input.payloads
    return sealed, contract.users[0].email


async def test_decode_needs_a_role_over_the_tenant_the_payload_is_sealed_for(
    dev_env: WorkflowEnvironment, codec_http: httpx.AsyncClient
) -> None:
    slug = f"tenant-a{uuid.uuid4().hex[:6]}"
    sealed, email = await sealed_onboarding_input(dev_env, slug)
    assert json.loads(sealed.metadata[BINDING]) == [dev_env.client.namespace, f"tenant/{slug}"]
    for user in ("tess", "vera", "root"):
        opened = await codec_http.post("/decode", content=body(sealed), headers=auth(user))
        assert opened.status_code == 200, (user, opened.text)
        assert email in base64.b64decode(opened.json()["payloads"][0]["data"]).decode(), user
    for user, grants in (("bo", "approver:tenant-b*"), ("wanda", "admin:workerclusters/*")):
        refused = await codec_http.post("/decode", content=body(sealed), headers={**auth(user), "Origin": UI})
        assert refused.status_code == 403, (user, refused.text)
        error = refused.json()["error"]
        assert f"decoding a payload of tenant {slug} needs a role over it" in error, error
        assert f"{user}'s token grants {grants}" in error and f"add viewer:{slug}" in error
        assert email not in refused.text and refused.headers["Access-Control-Allow-Origin"] == UI


async def test_a_payload_of_no_tenant_or_of_no_workflow_decodes_only_for_every_target(
    codec_http: httpx.AsyncClient,
) -> None:
    secret = b'"nightly report"'
    for sealed, why in (
        (await seal(secret, "nightly/report"), "decoding a payload of run nightly/report needs a role over it"),
        (await seal(secret, None), "a payload sealed for no workflow (by /encode, or before payloads were bound"),
    ):
        refused = await codec_http.post("/decode", content=body(sealed), headers=auth("tess"))
        assert refused.status_code == 403 and why in refused.json()["error"], refused.text
        assert "nightly report" not in refused.text
        opened = await codec_http.post("/decode", content=body(sealed), headers=auth("vera"))
        assert opened.status_code == 200 and base64.b64decode(opened.json()["payloads"][0]["data"]) == secret


async def test_a_binding_relabelled_to_a_tenant_the_token_may_view_does_not_open_the_payload(
    codec_http: httpx.AsyncClient,
) -> None:
    sealed = await seal(b'"tenant-b secret"', "tenant/tenant-b1")
    relabelled = Payload(metadata={**sealed.metadata, BINDING: b'["default", "tenant/tenant-a1"]'}, data=sealed.data)
    refused = await codec_http.post("/decode", content=body(relabelled), headers=auth("tess"))
    assert refused.status_code == 400 and "failed authentication" in refused.json()["error"]
    assert "tenant-b secret" not in refused.text


async def test_encode_needs_requester_over_every_target(codec_http: httpx.AsyncClient) -> None:
    start_input = Payload(metadata={"encoding": b"json/plain"}, data=b'{"contract": {"slug": "tenant-a1"}}')
    for user in ("tess", "vera", "alice", "bo"):
        refused = await codec_http.post("/encode", content=body(start_input), headers=auth(user))
        assert refused.status_code == 403, (user, refused.text)
        error = refused.json()["error"]
        assert "needs the requester role (or admin) over every target" in error and "add requester:*" in error
        assert "binary/encrypted" not in refused.text
    for user in ("rita", "root"):
        sealed = await codec_http.post("/encode", content=body(start_input), headers=auth(user))
        assert sealed.status_code == 200, (user, sealed.text)
        assert base64.b64decode(sealed.json()["payloads"][0]["metadata"]["encoding"]) == b"binary/encrypted"
