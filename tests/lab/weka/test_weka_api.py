"""The Weka REST API v2 stand-in over real HTTP: tokens, organizations, filesystems, quotas, snapshot."""

from __future__ import annotations

import httpx
from weka_harness import PASSWORD, WekaLab

from tenantflow.lab.weka.app import TiB


async def unprovisioned(client: httpx.AsyncClient) -> int:
    response = await client.get("/cluster")
    assert response.status_code == 200
    return int(response.json()["data"]["capacity"]["unprovisioned_bytes"])


async def fs_by_name(client: httpx.AsyncClient, name: str) -> dict:
    listing = (await client.get("/fileSystems")).json()["data"]
    return next(f for f in listing if f["name"] == name)


async def test_login_refresh_and_expiry(weka: WekaLab) -> None:
    tokens = await weka.login()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 300
    async with weka.client(tokens["access_token"]) as client:
        me = (await client.get("/users/whoami")).json()["data"]
        assert me["username"] == "admin" and me["role"] == "ClusterAdmin" and me["org_name"] == "Root"
        weka.clock.now += 301
        expired = await client.get("/users/whoami")
        assert expired.status_code == 401 and expired.json()["message"]
    renewed = await weka.api.post("/login/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert renewed.status_code == 200
    async with weka.client(renewed.json()["data"]["access_token"]) as client:
        assert (await client.get("/users/whoami")).status_code == 200
    reused = await weka.api.post("/login/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert reused.status_code == 401
    assert (await weka.api.get("/fileSystems")).status_code == 401
    wrong = await weka.api.post("/login", json={"username": "admin", "password": "nope", "org": "Root"})
    assert wrong.status_code == 401 and "message" in wrong.json()


async def test_organization_crud_and_org_users(weka: WekaLab, admin: httpx.AsyncClient) -> None:
    created = await admin.post(
        "/organizations",
        json={"name": "tenant-foo", "username": "admin-foo", "password": "pw-foo", "total_quota": 60 * TiB},
    )
    assert created.status_code == 201
    org = created.json()["data"]
    assert org["name"] == "tenant-foo" and org["total_quota"] == 60 * TiB and org["total_allocated"] == 0
    duplicate = await admin.post("/organizations", json={"name": "tenant-foo", "username": "x", "password": "y"})
    assert duplicate.status_code == 409
    limits = await admin.put(f"/organizations/{org['uid']}/limits", json={"total_quota": 70 * TiB})
    assert limits.json()["data"]["total_quota"] == 70 * TiB
    names = [o["name"] for o in (await admin.get("/organizations")).json()["data"]]
    assert names == ["Root", "tenant-foo"]

    assert (await admin.get(f"/organizations/{org['uid']}/tokens")).status_code == 404, "no such Weka route"

    org_admin = await weka.login("admin-foo", "pw-foo", "tenant-foo")
    async with weka.client(org_admin["access_token"]) as client:
        made = await client.post("/users", json={"username": "csi-foo", "password": "pw-csi", "role": "CSI"})
        assert made.status_code == 201, made.text
        assert (
            await client.post("/users", json={"username": "csi-foo", "password": "x", "role": "CSI"})
        ).status_code == 409
        assert (
            await client.post("/users", json={"username": "boss", "password": "x", "role": "ClusterAdmin"})
        ).status_code == 400
        assert sorted(u["username"] for u in (await client.get("/users")).json()["data"]) == ["admin-foo", "csi-foo"]
        csi_login = await weka.login("csi-foo", "pw-csi", "tenant-foo")
        async with weka.client(csi_login["access_token"]) as csi:
            me = (await csi.get("/users/whoami")).json()["data"]
            assert me["role"] == "CSI" and me["org_name"] == "tenant-foo"
            assert (await csi.get("/organizations")).status_code == 403
            assert (await csi.post("/users", json={"username": "x", "password": "y", "role": "CSI"})).status_code == 403
        assert (await client.delete(f"/users/{made.json()['data']['uid']}")).status_code == 200
        async with weka.client(csi_login["access_token"]) as csi:
            assert (await csi.get("/users/whoami")).status_code == 401
        fs = await client.post(
            "/fileSystems", json={"name": "tenant-foo-home", "group_name": "default", "total_capacity": 5 * TiB}
        )
        assert fs.status_code == 201
        assert [f["name"] for f in (await client.get("/fileSystems")).json()["data"]] == ["tenant-foo-home"]
        busy = await admin.delete(f"/organizations/{org['uid']}")
        assert busy.status_code == 409
        assert (await client.delete(f"/fileSystems/{fs.json()['data']['uid']}")).status_code == 200
    assert (await admin.delete(f"/organizations/{org['uid']}")).status_code == 200
    assert (await admin.get(f"/organizations/{org['uid']}")).status_code == 404


async def test_filesystem_capacity_accounting(admin: httpx.AsyncClient) -> None:
    before = await unprovisioned(admin)
    assert before == 400 * TiB
    created = await admin.post(
        "/fileSystems", json={"name": "tenant-foo-scratch", "group_name": "default", "total_capacity": 50 * TiB}
    )
    assert created.status_code == 201
    fs = created.json()["data"]
    assert fs["total_budget"] == 50 * TiB and fs["free_total"] == 50 * TiB and fs["is_ready"] is True
    assert await unprovisioned(admin) == before - 50 * TiB
    assert (
        await admin.post(
            "/fileSystems", json={"name": "tenant-foo-scratch", "group_name": "default", "total_capacity": TiB}
        )
    ).status_code == 409
    too_big = await admin.post(
        "/fileSystems", json={"name": "huge", "group_name": "default", "total_capacity": 1000 * TiB}
    )
    assert too_big.status_code == 400 and "capacity" in too_big.json()["message"]
    resized = await admin.put(f"/fileSystems/{fs['uid']}", json={"total_capacity": 60 * TiB})
    assert resized.json()["data"]["total_budget"] == 60 * TiB
    assert await unprovisioned(admin) == before - 60 * TiB
    assert (await admin.get(f"/fileSystems/{fs['uid']}")).json()["data"]["name"] == "tenant-foo-scratch"
    assert (await admin.delete(f"/fileSystems/{fs['uid']}")).status_code == 200
    assert await unprovisioned(admin) == before
    assert (await admin.get(f"/fileSystems/{fs['uid']}")).status_code == 404


async def test_directory_quotas(weka: WekaLab, admin: httpx.AsyncClient) -> None:
    home = await fs_by_name(admin, "home")
    resolved = await admin.get(f"/fileSystems/{home['uid']}/resolvePath", params={"path": "/alice"})
    assert resolved.status_code == 200
    inode = resolved.json()["data"]["inode_id"]
    missing = await admin.get(f"/fileSystems/{home['uid']}/resolvePath", params={"path": "/bob"})
    assert missing.status_code == 400 and "PATH_NOT_FOUND" in missing.json()["message"]
    for bad_query in ({}, {"path": "alice"}, {"path": "/x/../alice"}):
        assert (await admin.get(f"/fileSystems/{home['uid']}/resolvePath", params=bad_query)).status_code == 400
    async with httpx.AsyncClient(base_url=weka.url) as control:
        made = await control.post("/_lab/mkdir", json={"filesystem": "scratch", "path": "/tenant-foo"})
        assert made.status_code == 200

    body = {"hard_limit_bytes": 100 * 10**9, "soft_limit_bytes": 90 * 10**9, "grace_seconds": 0, "path": "/alice"}
    quota = await admin.put(f"/fileSystems/{home['uid']}/quota/{inode}", json=body)
    assert quota.status_code == 200
    assert quota.json()["data"]["status"] == "ACTIVE"
    listed = (await admin.get(f"/fileSystems/{home['uid']}/quota")).json()["data"]
    assert listed[inode]["hard_limit_bytes"] == 100 * 10**9 and listed[inode]["path"] == "/alice"
    patched = await admin.patch(f"/fileSystems/{home['uid']}/quota/{inode}", json={"soft_limit_bytes": 95 * 10**9})
    assert patched.json()["data"]["soft_limit_bytes"] == 95 * 10**9
    assert patched.json()["data"]["hard_limit_bytes"] == 100 * 10**9
    bad = await admin.put(
        f"/fileSystems/{home['uid']}/quota/{inode}", json={"hard_limit_bytes": 1, "soft_limit_bytes": 2}
    )
    assert bad.status_code == 400
    assert (await admin.delete(f"/fileSystems/{home['uid']}/quota/{inode}")).status_code == 200
    assert (await admin.delete(f"/fileSystems/{home['uid']}/quota/{inode}")).status_code == 404
    assert (await admin.get(f"/fileSystems/{home['uid']}/quota")).json()["data"] == {}
    assert (await admin.put(f"/fileSystems/{home['uid']}/quota/999", json=body)).status_code == 404

    scratch = await fs_by_name(admin, "scratch")
    tenant = await admin.get(f"/fileSystems/{scratch['uid']}/resolvePath", params={"path": "/tenant-foo"})
    assert tenant.status_code == 200


async def test_snapshot_returns_to_before(weka: WekaLab, admin: httpx.AsyncClient) -> None:
    async with httpx.AsyncClient(base_url=weka.url) as control:
        before = (await control.get("/_lab/snapshot")).json()
        org = (
            await admin.post("/organizations", json={"name": "t", "username": "t-admin", "password": PASSWORD})
        ).json()["data"]
        fs = (
            await admin.post("/fileSystems", json={"name": "t-home", "group_name": "default", "total_capacity": TiB})
        ).json()["data"]
        during = (await control.get("/_lab/snapshot")).json()
        assert during != before and [f["name"] for f in during["filesystems"]] == ["home", "scratch", "t-home"]
        await admin.delete(f"/fileSystems/{fs['uid']}")
        await admin.delete(f"/organizations/{org['uid']}")
        assert (await control.get("/_lab/snapshot")).json() == before
        journal = (await control.get("/_lab/requests")).json()
        assert journal["writes"] >= 4
