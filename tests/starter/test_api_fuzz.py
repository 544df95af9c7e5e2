"""``schemathesis`` against the HTTP API's own OpenAPI document: ``tenantflow serve-api`` as a real process on a
loopback port, backed by the Temporal dev server and a worker (fake activities, four-eyes on), is sent inputs
generated from ``GET /openapi.json``: valid ones (contracts that start real runs, gate answers, filters) and
invalid ones (wrong types, missing fields, strings that break every pattern) for every operation.

No answer may be a server error; every answer must match what the document says (status, content type, schema);
the API must accept what the document allows and refuse what it does not; and every 4xx body must name the reason
or, for a refused field, the field. The seed is fixed (:data:`DEFAULT_SEED`) and printed;
``TENANTFLOW_FUZZ_SEED`` draws others.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from schemathesis import Case, GenerationMode
from schemathesis.checks import positive_data_acceptance
from schemathesis.config import SchemathesisConfig
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.devserver import free_port
from tenantflow.worker.tokens import new_token
from tests.security.four_eyes import four_eyes_worker
from tests.starter.conftest import CLI

TOKEN, TOKEN_LINE = new_token("fuzzer", ["admin:*"])
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 25
"""Inputs per operation and mode (valid, invalid): 19 operations x 2 x 25 keep the run near a minute."""
PROBLEM_STATUSES = {400, 401, 403, 404, 405, 409, 413, 422}
REJECTS_INVALID = [*SchemathesisConfig().projects.default.checks.negative_data_rejection.expected_statuses, "413"]
"""What may answer an invalid input: schemathesis's statuses for a refusal, and 413, with which the API refuses a
body over its 1 MiB cap before reading it, whatever it holds (RFC 9110, 15.5.14): a generated invalid body can be
that large."""
CONFIG = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": REJECTS_INVALID}}})
CONTRACT_BODIES = {
    "POST /runs/onboarding",
    "POST /runs/enrollment",
    "POST /tenants/{slug}/change",
    "POST /tenants/{slug}/offboarding",
    "POST /workerclusters/{namespace}/{worker}/decommission",
    "POST /contracts/tenant",
    "POST /contracts/workercluster",
    "POST /plans",
}
"""Operations whose body holds a contract: its models check what JSON Schema cannot say (an OpenSSH key decodes,
a name is printable text, a soft quota is below its hard one, GPUs fill whole nodes), so a body the document
allows may be refused with a 422 naming the field; everywhere else the API must accept what the document allows."""


def names_the_reason(ctx: Any, response: schemathesis.Response, case: Case) -> None:
    """A 4xx body is a problem whose ``error`` says what is wrong, and a 422 names each field it refuses."""
    if not 400 <= response.status_code < 500:
        return
    assert response.status_code in PROBLEM_STATUSES, f"unexpected {response.status_code}"
    body = response.json()
    error = body.get("error")
    assert isinstance(error, str) and len(error.split()) >= 3, f"no reason in {body!r}"
    if response.status_code == 422:
        assert body.get("fields"), f"a 422 names no field: {body!r}"
        for field in body["fields"]:
            assert field.rsplit(".", 1)[-1] in error, f"the error does not name {field}: {error!r}"


def fuzz(base_url: str, run_seed: int) -> list[str]:
    """Every operation of the served document, with valid and invalid inputs; the failures, one line each."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", config=CONFIG, headers=AUTH)
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        excluded = [positive_data_acceptance] if operation.label in CONTRACT_BODIES else []
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @seed(run_seed)
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
                print_blob=True,
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case: Case) -> None:
                case.call_and_validate(
                    base_url=base_url,
                    headers=AUTH,
                    additional_checks=[names_the_reason],
                    excluded_checks=excluded,  # noqa: B023 - the test runs within this iteration
                )

            try:
                check()
            except (Exception, BaseExceptionGroup) as exc:  # every operation is tried; failures reported together
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    return failures


@asynccontextmanager
async def serve_api(env: WorkflowEnvironment, queue: str, tmp_path: Path) -> AsyncIterator[str]:
    """``tenantflow serve-api`` on a free loopback port with the fuzzer's token; yields its base URL."""
    (tmp_path / "tokens").write_text(TOKEN_LINE + "\n")
    port = free_port()
    process_env = {
        **os.environ,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_IDENTITY": "tenantflow-api@fuzz",
        "TENANTFLOW_TASK_QUEUE": queue,
        "TENANTFLOW_API_TOKENS_FILE": str(tmp_path / "tokens"),
    }
    log = (tmp_path / "serve-api.log").open("wb")
    proc = subprocess.Popen(
        [CLI, "serve-api", "--port", str(port)], env=process_env, stdout=log, stderr=subprocess.STDOUT
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
            for _ in range(300):
                try:
                    await http.get("/openapi.json")
                    break
                except httpx.ConnectError:
                    assert proc.poll() is None, (tmp_path / "serve-api.log").read_text()
                    await asyncio.sleep(0.1)
            else:
                pytest.fail("serve-api did not start listening")
        yield base_url
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


async def terminate_runs(client: Client, queue: str) -> None:
    """End the runs the generated starts left waiting at their gates."""
    async for execution in client.list_workflows(f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"):
        await client.get_workflow_handle(execution.id, run_id=execution.run_id).terminate("fuzzing done")


DEFAULT_SEED = 20261205
"""Every run of the suite fuzzes the same inputs, so a failure is the code's, not the draw's; set
``TENANTFLOW_FUZZ_SEED`` to explore others (a new finding becomes a fix and a regression test)."""


async def test_no_generated_input_makes_the_api_fail(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    run_seed = int(os.environ.get("TENANTFLOW_FUZZ_SEED") or DEFAULT_SEED)
    print(f"fuzzing seed {run_seed} (replay: TENANTFLOW_FUZZ_SEED={run_seed})")
    async with four_eyes_worker(dev_env) as queue:
        try:
            async with serve_api(dev_env, queue, tmp_path) as base_url:
                failures = await asyncio.to_thread(fuzz, base_url, run_seed)
        finally:
            await terminate_runs(dev_env.client, queue)
    assert not failures, f"seed {run_seed}:\n" + "\n\n".join(failures)
    assert TOKEN not in (tmp_path / "serve-api.log").read_text(), "the API logged a bearer token"
