"""The lab's stand-ins survive a restart: what each saves (``lab.statefile``) is what the next run serves.

Each case writes through a stand-in's real HTTP API (or its store, for the Kubernetes emulator's
controllers' side), saves it as ``lab serve`` does, rebuilds the stand-in from the saved file, and checks
the state and the sequences (Authentik pks, resourceVersions) continue instead of starting over.
"""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import yaml
from aiohttp import web

from tenantflow import lab
from tenantflow.lab.authentik.api import SERVICE_KEY as AUTHENTIK_SERVICE
from tenantflow.lab.authentik.app import build_app as build_authentik
from tenantflow.lab.authentik.store import ApiValidationError, AuthentikStore
from tenantflow.lab.daemons.process import free_port
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.kubeapi.tls import kept_cert
from tenantflow.lab.serve import start_site
from tenantflow.lab.statefile import Saved, load, state_file, write_atomic
from tenantflow.lab.weka.app import build_app as build_weka
from tenantflow.lab.weka.service import SERVICE_KEY as WEKA_SERVICE

TOKEN = "lab-token"
WEKA_PASSWORD = "lab-weka-password"


async def serving(app: web.Application) -> AsyncIterator[httpx.AsyncClient]:
    port = free_port()
    runner = await start_site(app, port)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            yield http
    finally:
        await runner.cleanup()


def saved_and_loaded(tmp_path: Path, name: str, dump: dict[str, object]) -> dict[str, object]:
    """Save ``dump`` as ``lab serve`` does and read it back as the next run does."""
    path = state_file(tmp_path, name)
    assert Saved(path, lambda: dump).save_if_changed()
    loaded = load(path)
    assert loaded is not None
    return loaded


def test_state_is_written_atomically_and_only_when_it_changed(tmp_path: Path) -> None:
    path = state_file(tmp_path, "thing")
    assert load(path) is None
    state = {"n": 1}
    saved = Saved(path, lambda: dict(state), revision=lambda: state["n"])
    assert saved.save_if_changed() and load(path) == {"n": 1}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text('{"n": "edited"}')
    assert not saved.save_if_changed(), "the revision did not change: nothing is written"
    state["n"] = 2
    assert saved.save_if_changed() and load(path) == {"n": 2}
    write_atomic(path, json.dumps({"n": 3}))
    assert load(path) == {"n": 3} and [p.name for p in path.parent.iterdir()] == [path.name]


async def test_authentik_keeps_its_objects_and_pk_sequence(tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    first = build_authentik(TOKEN)
    async for http in serving(first):
        group = (await http.post("/api/v3/core/groups/", json={"name": "tenant-a"}, headers=headers)).json()
        alice, bob = [
            (
                await http.post(
                    "/api/v3/core/users/",
                    headers=headers,
                    json={"username": name, "name": name.title(), "groups": [group["pk"]]},
                )
            ).json()
            for name in ("alice", "bob")
        ]
        assert (await http.delete(f"/api/v3/core/users/{bob['pk']}/", headers=headers)).status_code == 204
    before = first[AUTHENTIK_SERVICE].store
    loaded = saved_and_loaded(tmp_path, "authentik", before.dump())

    second = build_authentik(TOKEN, store=AuthentikStore.restore(loaded))
    assert second[AUTHENTIK_SERVICE].store.snapshot() == before.snapshot()
    async for http in serving(second):
        again = await http.post("/api/v3/core/users/", json={"username": "alice", "name": "A"}, headers=headers)
        assert again.status_code == 400 and "username" in again.json()
        dave = (
            await http.post("/api/v3/core/users/", json={"username": "dave", "name": "Dave"}, headers=headers)
        ).json()
        members = (await http.get(f"/api/v3/core/groups/{group['pk']}/", headers=headers)).json()["users"]
    assert dave["pk"] == bob["pk"] + 1, "a pk is never handed out twice, even across a restart"
    assert members == [alice["pk"]]


async def test_weka_keeps_organizations_directories_and_org_users(tmp_path: Path) -> None:
    first = build_weka("admin", WEKA_PASSWORD)
    async for http in serving(first):
        login = (await http.post("/api/v2/login", json={"username": "admin", "password": WEKA_PASSWORD})).json()
        admin = {"Authorization": f"Bearer {login['data']['access_token']}"}
        org = await http.post(
            "/api/v2/organizations",
            headers=admin,
            json={"name": "tenant-a", "username": "tenant-a-admin", "password": "pw", "total_quota": 2**40},
        )
        assert org.status_code == 201, org.text
        org_login = (
            await http.post("/api/v2/login", json={"username": "tenant-a-admin", "password": "pw", "org": "tenant-a"})
        ).json()["data"]["access_token"]
        made_user = await http.post(
            "/api/v2/users",
            headers={"Authorization": f"Bearer {org_login}"},
            json={"username": "csi-a", "password": "pw-csi", "role": "CSI"},
        )
        assert made_user.status_code == 201, made_user.text
        token = (
            await http.post("/api/v2/login", json={"username": "csi-a", "password": "pw-csi", "org": "tenant-a"})
        ).json()["data"]["access_token"]
        made = await http.post("/_lab/mkdir", json={"filesystem": "scratch", "path": "/tenant-a"})
        assert made.status_code == 200, made.text
    loaded = saved_and_loaded(tmp_path, "weka", first[WEKA_SERVICE].dump())

    second = build_weka("admin", "a-new-password-is-ignored", restored=loaded)
    assert second[WEKA_SERVICE].snapshot() == first[WEKA_SERVICE].snapshot()
    async for http in serving(second):
        whoami = await http.get("/api/v2/users/whoami", headers={"Authorization": f"Bearer {token}"})
        assert whoami.status_code == 200 and whoami.json()["data"]["org_name"] == "tenant-a", whoami.text
        relogin = await http.post(
            "/api/v2/login", json={"username": "tenant-a-admin", "password": "pw", "org": "tenant-a"}
        )
        assert relogin.status_code == 200, relogin.text


def test_kube_store_keeps_objects_crds_and_resource_versions(tmp_path: Path) -> None:
    store = Store()
    crds = sorted((Path(lab.__file__).parent / "crds").glob("*.yaml"))
    store.seed([yaml.safe_load(path.read_text()) for path in crds])
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-a"}})
    store.create(
        {
            "apiVersion": "scheduling.example.io/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": "tenant-a"},
            "spec": {"tenant": "tenant-a", "reservedNodes": ["gpu-01"]},
        }
    )
    before = store.dump()
    restored = Store.restore(saved_and_loaded(tmp_path, "kube-tenant-cluster", before))

    assert restored.dump() == before
    reservation = restored.get("scheduling.example.io", "reservations", "tenant-a")
    assert reservation["spec"]["reservedNodes"] == ["gpu-01"], "the CRD is served again after the restore"
    created = restored.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after", "namespace": "tenant-a"}}
    )
    assert int(created["metadata"]["resourceVersion"]) == store.resource_version + 1
    with pytest.raises(ApiError) as gone:
        restored.subscribe(lambda *_: None, since=store.resource_version - 1)
    assert gone.value.code == 410, "watch history does not survive a restart: an old version is Gone"


def test_the_kube_serving_certificate_is_kept_across_restarts(tmp_path: Path) -> None:
    cert, key = tmp_path / "kube-ca.pem", tmp_path / "kube-ca.key"
    first = kept_cert(cert, key)
    assert kept_cert(cert, key) == first, "clients that trust the first run's CA keep trusting the next"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    key.unlink()
    assert kept_cert(cert, key).cert_pem != first.cert_pem


def test_authentik_is_saved_after_every_write_and_only_then(tmp_path: Path) -> None:
    """The Authentik store's revision moves with every write (a password too), so the lab saves it without
    dumping the whole directory every quarter second to find out."""
    store = AuthentikStore("install")
    saved = Saved(tmp_path / "authentik.json", store.dump, lambda: store.revision)
    assert saved.save_if_changed()
    assert not saved.save_if_changed()
    user = store.create_user({"username": "alice", "name": "Alice"})
    assert saved.save_if_changed() and not saved.save_if_changed()
    store.set_password(user.pk, {"password": "s3cret-pass"})
    assert saved.save_if_changed()
    assert load(tmp_path / "authentik.json") == json.loads(json.dumps(store.dump()))
    with pytest.raises(ApiValidationError):
        store.create_user({"username": "alice", "name": "Again"})
    assert not saved.save_if_changed()
