"""``tenantflow token`` and ``tenantflow serve-api --tls-cert --tls-key`` as real processes: HTTPS only, the
per-user token file holds hashes, and a request without a known token is refused."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tenantflow.lab.kubeapi.tls import self_signed
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import free_port
from tests.starter.conftest import CLI, cli_env


def make_token(api: TenantflowClient, user: str, *roles: str) -> tuple[str, str]:
    """The token and the token-file line ``tenantflow token USER --role ROLE:PATTERN ...`` prints."""
    args = [CLI, "token", user, *(f"--role={role}" for role in roles)]
    out = subprocess.run(args, env=cli_env(api), capture_output=True, text=True, check=True, timeout=60).stdout
    token = out.split("(shown once): ", 1)[1].split()[0]
    line = out.split("append to the token file: ", 1)[1].strip()
    return token, line


@pytest.fixture
def served(fake_api: TenantflowClient, tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """``serve-api`` over HTTPS with alice's token; yields the base URL, the token and the CA file."""
    token, line = make_token(fake_api, "alice", "viewer:tenant-*", "requester:tenant-a*")
    assert token not in line and line.endswith(" alice viewer:tenant-* requester:tenant-a*")
    (tmp_path / "tokens").write_text(f"# who may call the API\n{line}\n")
    cert = self_signed("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(cert.cert_pem)
    (tmp_path / "tls.key").write_bytes(cert.key_pem)
    port = free_port()
    env = {**cli_env(fake_api), "TENANTFLOW_API_TOKENS_FILE": str(tmp_path / "tokens")}
    proc = subprocess.Popen(
        [
            CLI,
            "serve-api",
            "--port",
            str(port),
            "--tls-cert",
            str(tmp_path / "tls.crt"),
            "--tls-key",
            str(tmp_path / "tls.key"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"https://127.0.0.1:{port}", token, tmp_path / "tls.crt"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_serve_api_speaks_https_with_per_user_tokens(served: tuple[str, str, Path]) -> None:
    base, token, ca = served
    async with httpx.AsyncClient(base_url=base, verify=str(ca), timeout=10) as http:
        for _ in range(100):
            try:
                anonymous = await http.get("/runs/tenant/tenant-none")
                break
            except httpx.ConnectError:
                await asyncio.sleep(0.2)
        else:
            pytest.fail("serve-api did not start listening")
        assert anonymous.status_code == 401
        known = await http.get("/runs/tenant/tenant-none", headers={"Authorization": f"Bearer {token}"})
        assert known.status_code == 404, known.text
    plain = base.replace("https://", "http://")
    async with httpx.AsyncClient(base_url=plain, timeout=10) as http:
        with pytest.raises(httpx.HTTPError):
            await http.get("/runs/tenant/tenant-none", headers={"Authorization": f"Bearer {token}"})


def test_token_refuses_a_role_it_does_not_know_naming_the_roles(fake_api: TenantflowClient) -> None:
    for roles, says in (
        (["--role=reader:tenant-*"], "unknown role 'reader'; roles are viewer, requester, approver, admin"),
        (["--role=tenant-*"], "'tenant-*' is not ROLE:PATTERN"),
        ([], "--role"),
    ):
        done = subprocess.run(
            [CLI, "token", "alice", *roles], env=cli_env(fake_api), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2 and says in done.stderr, done.stderr
        assert "shown once" not in done.stdout, "no token is made with a bad role"
