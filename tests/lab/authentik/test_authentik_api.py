"""The Authentik stand-in over real HTTP; every exchange is checked against the schema by the fixture."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from authentik_harness import AuthentikLab, tampered, validate_exchange
from openapi_core import OpenAPI
from openapi_core.exceptions import OpenAPIError

from tenantflow.lab.authentik.store import num_pk_of

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"


async def make_group(lab: AuthentikLab, name: str, **extra: Any) -> dict[str, Any]:
    response = await lab.client.post("/core/groups/", json={"name": name, **extra})
    assert response.status_code == 201, response.text
    return response.json()


async def make_user(lab: AuthentikLab, username: str, **extra: Any) -> dict[str, Any]:
    body = {"username": username, "name": username.title(), "email": f"{username}@tenant-foo.example", **extra}
    response = await lab.client.post("/core/users/", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def test_create_user_with_attributes_and_group(authentik: AuthentikLab) -> None:
    parent = await make_group(authentik, "tenants")
    group = await make_group(authentik, "tenant-foo", parents=[parent["pk"]], attributes={"tenant_slug": "tenant-foo"})
    assert group["num_pk"] == num_pk_of(group["pk"])
    assert group["parents"] == [parent["pk"]]
    user = await make_user(
        authentik, "alice", groups=[group["pk"]], attributes={"ssh_keys": SSH_KEY, "gidNumber": "4099"}
    )
    assert isinstance(user["pk"], int)
    assert user["attributes"] == {"ssh_keys": SSH_KEY, "gidNumber": "4099"}
    assert user["groups"] == [group["pk"]]
    assert user["groups_obj"][0]["name"] == "tenant-foo"
    assert user["is_active"] is True and user["type"] == "internal" and user["path"] == "users"

    fetched = (await authentik.client.get(f"/core/users/{user['pk']}/")).json()
    assert fetched == user
    listed = (await authentik.client.get("/core/groups/", params={"name": "tenant-foo"})).json()
    assert [g["pk"] for g in listed["results"]] == [group["pk"]]
    assert [u["username"] for u in listed["results"][0]["users_obj"]] == ["alice"]
    parent_view = (
        await authentik.client.get(f"/core/groups/{parent['pk']}/", params={"include_children": "true"})
    ).json()
    assert parent_view["children"] == [group["pk"]]
    assert parent_view["children_obj"][0]["name"] == "tenant-foo"
    by_attr = (
        await authentik.client.get("/core/groups/", params={"attributes": '{"tenant_slug": "tenant-foo"}'})
    ).json()
    assert by_attr["pagination"]["count"] == 1
    response = await authentik.client.post(f"/core/users/{user['pk']}/set_password/", json={"password": "pw"})
    assert response.status_code == 204


async def test_add_and_remove_user(authentik: AuthentikLab) -> None:
    group = await make_group(authentik, "tenant-foo")
    bob = await make_user(authentik, "bob")
    response = await authentik.client.post(f"/core/groups/{group['pk']}/add_user/", json={"pk": bob["pk"]})
    assert response.status_code == 204
    members = await authentik.client.get("/core/users/", params={"groups_by_name": "tenant-foo"})
    assert [u["username"] for u in members.json()["results"]] == ["bob"]
    by_member = await authentik.client.get("/core/groups/", params={"members_by_username": "bob"})
    assert [g["name"] for g in by_member.json()["results"]] == ["tenant-foo"]

    response = await authentik.client.post(f"/core/groups/{group['pk']}/remove_user/", json={"pk": bob["pk"]})
    assert response.status_code == 204
    fetched = (await authentik.client.get(f"/core/groups/{group['pk']}/")).json()
    assert fetched["users"] == [] and fetched["users_obj"] == []

    unknown_user = await authentik.client.post(f"/core/groups/{group['pk']}/add_user/", json={"pk": 999})
    assert unknown_user.status_code == 404
    unknown_group = await authentik.client.post(f"/core/groups/{uuid.uuid4()}/add_user/", json={"pk": bob["pk"]})
    assert unknown_group.status_code == 404


async def test_pagination_envelope(authentik: AuthentikLab) -> None:
    for index in range(25):
        await make_user(authentik, f"user{index:02d}")
    first = (await authentik.client.get("/core/users/", params={"type": "internal"})).json()
    assert first["pagination"] == {
        "next": 2,
        "previous": 0,
        "count": 25,
        "current": 1,
        "total_pages": 2,
        "start_index": 1,
        "end_index": 20,
    }
    assert len(first["results"]) == 20 and first["autocomplete"] == {}
    second = (await authentik.client.get("/core/users/", params={"page": 2, "type": "internal"})).json()
    assert second["pagination"]["next"] == 0 and second["pagination"]["previous"] == 1
    assert [u["username"] for u in second["results"]] == [f"user{i:02d}" for i in range(20, 25)]
    capped = (await authentik.client.get("/core/users/", params={"page_size": 500})).json()
    assert len(capped["results"]) == 26 and capped["pagination"]["total_pages"] == 1
    ordered = (await authentik.client.get("/core/users/", params={"ordering": "-username", "page_size": 3})).json()
    assert [u["username"] for u in ordered["results"]] == ["user24", "user23", "user22"]
    searched = (await authentik.client.get("/core/users/", params={"search": "user1"})).json()
    assert searched["pagination"]["count"] == 10
    empty = (await authentik.client.get("/core/groups/", params={"name": "nope"})).json()
    assert empty["pagination"] == {
        "next": 0,
        "previous": 0,
        "count": 0,
        "current": 1,
        "total_pages": 1,
        "start_index": 0,
        "end_index": 0,
    }
    beyond = await authentik.client.get("/core/users/", params={"page": 9})
    assert beyond.status_code == 404


async def test_deactivate_user_and_filters(authentik: AuthentikLab) -> None:
    carol = await make_user(authentik, "carol", attributes={"tenant": "foo"})
    await make_user(authentik, "dave")
    response = await authentik.client.patch(f"/core/users/{carol['pk']}/", json={"is_active": False})
    assert response.status_code == 200
    assert response.json()["is_active"] is False
    assert response.json()["attributes"] == {"tenant": "foo"}
    inactive = (await authentik.client.get("/core/users/", params={"is_active": "false"})).json()
    assert [u["username"] for u in inactive["results"]] == ["carol"]
    by_attr = (await authentik.client.get("/core/users/", params={"attributes": '{"tenant": "foo"}'})).json()
    assert [u["username"] for u in by_attr["results"]] == ["carol"]
    by_name = (await authentik.client.get("/core/users/", params={"username": "dave"})).json()
    assert [u["username"] for u in by_name["results"]] == ["dave"]
    replaced = await authentik.client.put(f"/core/users/{carol['pk']}/", json={"username": "carol", "name": "Carol C"})
    assert replaced.status_code == 200 and replaced.json()["name"] == "Carol C"


async def test_validation_errors(authentik: AuthentikLab) -> None:
    await make_user(authentik, "alice")
    duplicate = await authentik.client.post("/core/users/", json={"username": "alice", "name": "Again"})
    assert duplicate.status_code == 400
    assert duplicate.json() == {"username": ["A user with that username already exists."]}
    await make_group(authentik, "tenant-foo")
    again = await authentik.client.post("/core/groups/", json={"name": "tenant-foo"})
    assert again.status_code == 400 and list(again.json()) == ["name"]
    bad_parent = await authentik.client.post("/core/groups/", json={"name": "x", "parents": [str(uuid.uuid4())]})
    assert bad_parent.status_code == 400 and "parents" in bad_parent.json()
    unknown_group = await authentik.client.get("/core/users/", params={"groups_by_name": "ghost"})
    assert unknown_group.status_code == 400 and "groups_by_name" in unknown_group.json()


async def test_not_found_and_delete(authentik: AuthentikLab) -> None:
    missing = await authentik.client.get("/core/users/4242/")
    assert missing.status_code == 404 and "detail" in missing.json()
    group_missing = await authentik.client.get(f"/core/groups/{uuid.uuid4()}/")
    assert group_missing.status_code == 404
    user = await make_user(authentik, "erin")
    group = await make_group(authentik, "g", users=[user["pk"]])
    assert (await authentik.client.delete(f"/core/users/{user['pk']}/")).status_code == 204
    assert (await authentik.client.get(f"/core/groups/{group['pk']}/")).json()["users"] == []
    assert (await authentik.client.delete(f"/core/groups/{group['pk']}/")).status_code == 204
    assert (await authentik.client.delete(f"/core/groups/{group['pk']}/")).status_code == 404


async def test_token_required(authentik: AuthentikLab) -> None:
    async with authentik.anonymous() as anonymous:
        missing = await anonymous.get("/core/users/")
        assert missing.status_code == 403
        assert missing.json() == {"detail": "Authentication credentials were not provided."}
    async with authentik.anonymous(headers={"Authorization": "Bearer wrong"}) as wrong:
        invalid = await wrong.get("/core/groups/")
        assert invalid.status_code == 403 and invalid.json()["detail"]
    async with authentik.anonymous() as anonymous:
        health = await anonymous.get("/root/config/")
        assert health.status_code == 200 and "capabilities" in health.json()


async def test_ldap_provider(authentik: AuthentikLab) -> None:
    providers = (await authentik.client.get("/providers/ldap/")).json()
    provider = providers["results"][0]
    assert provider["uid_start_number"] == 2000 and provider["gid_start_number"] == 4000
    assert provider["base_dn"] == "dc=auth,dc=example,dc=internal"
    single = await authentik.client.get(f"/providers/ldap/{provider['pk']}/")
    assert single.json() == provider


async def test_snapshot_is_stable(authentik: AuthentikLab) -> None:
    group = await make_group(authentik, "tenant-foo")
    await make_user(authentik, "zed", groups=[group["pk"]])
    await make_user(authentik, "amy", groups=[group["pk"]])
    async with httpx.AsyncClient(base_url=authentik.url) as control:
        first = (await control.get("/_lab/snapshot")).json()
        second = (await control.get("/_lab/snapshot")).json()
    assert first == second
    assert [u["username"] for u in first["users"]] == ["ldap-bind", "zed", "amy"]
    assert first["groups"][0]["members"] == ["amy", "zed"]
    await authentik.client.get("/core/users/")


@pytest.mark.parametrize("breakage", ["next_null", "group_without_users_obj", "pk_as_int"])
async def test_validator_rejects_wrong_responses(
    authentik: AuthentikLab, authentik_spec: OpenAPI, breakage: str
) -> None:
    group = await make_group(authentik, "tenant-foo")
    listing = await authentik.client.get("/core/groups/")
    assert listing.status_code == 200 and group["pk"]
    exchange = authentik.recorder.exchanges[-1]
    validate_exchange(authentik_spec, exchange)

    def change(body: dict[str, Any]) -> None:
        if breakage == "next_null":
            body["pagination"]["next"] = None
        elif breakage == "group_without_users_obj":
            del body["results"][0]["users_obj"]
        else:
            body["results"][0]["pk"] = 7

    with pytest.raises(OpenAPIError):
        validate_exchange(authentik_spec, tampered(exchange, change))
