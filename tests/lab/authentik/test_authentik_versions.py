"""The stand-in plays Authentik 2024.10 (a group has one ``parent``) or current (``parents``), told apart by
``GET /api/v3/admin/version/``; each release ignores the other's field, as Django REST framework does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from authentik_harness import TOKEN, AuthentikLab, start_server
from typer.testing import CliRunner

from tenantflow.lab.authentik.app import build_app
from tenantflow.lab.authentik.versions import AUTHENTIK_2024_10, AUTHENTIK_2025_10, single_parent
from tenantflow.starter.cli import EXIT_REFUSED, app


@pytest.fixture
async def authentik_2024() -> AsyncIterator[httpx.AsyncClient]:
    runner, url = await start_server(build_app(TOKEN, version=AUTHENTIK_2024_10))
    client = httpx.AsyncClient(base_url=url + "/api/v3", headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        yield client
    finally:
        await client.aclose()
        await runner.cleanup()


async def test_current_mode_reports_its_version_and_ignores_parent(authentik: AuthentikLab) -> None:
    version = (await authentik.client.get("/admin/version/")).json()
    assert int(version["version_current"].split(".")[0]) >= 2025
    tenants = (await authentik.client.post("/core/groups/", json={"name": "tenants"})).json()
    group = (await authentik.client.post("/core/groups/", json={"name": "t", "parent": tenants["pk"]})).json()
    assert group["parents"] == [] and "parent" not in group


async def test_2024_10_mode_nests_by_parent_and_ignores_parents(authentik_2024: httpx.AsyncClient) -> None:
    version = (await authentik_2024.get("/admin/version/")).json()
    assert version["version_current"].startswith("2024.10.")
    tenants = (await authentik_2024.post("/core/groups/", json={"name": "tenants"})).json()
    ignored = (await authentik_2024.post("/core/groups/", json={"name": "a", "parents": [tenants["pk"]]})).json()
    assert ignored["parent"] is None and "parents" not in ignored
    nested = (await authentik_2024.post("/core/groups/", json={"name": "b", "parent": tenants["pk"]})).json()
    assert (nested["parent"], nested["parent_name"]) == (tenants["pk"], "tenants")
    cleared = (await authentik_2024.patch(f"/core/groups/{nested['pk']}/", json={"parent": None})).json()
    assert cleared["parent"] is None
    bad = await authentik_2024.post("/core/groups/", json={"name": "c", "parent": "not-a-group"})
    assert bad.status_code == 400


def test_groups_have_one_parent_up_to_2025_10_and_parents_from_2025_12() -> None:
    assert [single_parent(v) for v in ("2024.10.5", "2025.2.4", AUTHENTIK_2025_10, "2025.12.0", "2026.5.0")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert single_parent(AUTHENTIK_2024_10)


def test_lab_up_refuses_an_unknown_authentik_mode_before_starting_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["lab", "up", "--state-dir", str(tmp_path / "lab"), "--authentik", "2023.1"])
    assert result.exit_code == EXIT_REFUSED, result.output
    assert "2024.10, 2025.2, 2025.10, 2025.12, current" in result.output and not (tmp_path / "lab").exists()
