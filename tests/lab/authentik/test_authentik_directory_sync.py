"""The outpost projection pushed after API writes: numbering rules, renames, and retry after a failure."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest
from authentik_harness import AuthentikLab

from tenantflow.lab.authentik.directory import RETRY_S, DirectoryGroup, DirectoryUser


@dataclass
class RecordingSink:
    users: dict[str, DirectoryUser] = field(default_factory=dict)
    groups: dict[str, DirectoryGroup] = field(default_factory=dict)
    fail_next: bool = False

    def _maybe_fail(self) -> None:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("slapd down")

    def upsert_user(self, user: DirectoryUser) -> None:
        self._maybe_fail()
        self.users[user.username] = user

    def upsert_group(self, group: DirectoryGroup) -> None:
        self._maybe_fail()
        self.groups[group.name] = group

    def delete_user(self, username: str) -> None:
        self.users.pop(username)

    def delete_group(self, name: str) -> None:
        self.groups.pop(name)


@pytest.fixture
def directory_sink() -> RecordingSink:
    return RecordingSink()


async def test_projection_numbers_and_renames(authentik: AuthentikLab, directory_sink: RecordingSink) -> None:
    assert set(directory_sink.users) == {"ldap-bind"}
    group = (await authentik.client.post("/core/groups/", json={"name": "g"})).json()
    user = (
        await authentik.client.post(
            "/core/users/",
            json={
                "username": "ann",
                "name": "Ann",
                "groups": [group["pk"]],
                "attributes": {"uidNumber": "5000", "gidNumber": 4099},
            },
        )
    ).json()
    ann = directory_sink.users["ann"]
    assert ann.uid_number == "5000"
    assert ann.gid_number == "5000", "an integer gidNumber attribute is ignored, as by the outpost"
    assert ann.member_of == ("cn=g,ou=groups,dc=auth,dc=example,dc=internal",)
    assert directory_sink.groups["g"].gid_number == str(4000 + group["num_pk"])
    assert directory_sink.groups["g"].members == ("ann",)

    await authentik.client.patch(f"/core/users/{user['pk']}/", json={"username": "anne"})
    assert "ann" not in directory_sink.users and "anne" in directory_sink.users
    assert directory_sink.groups["g"].members == ("anne",)


async def test_failed_push_is_retried(authentik: AuthentikLab, directory_sink: RecordingSink) -> None:
    directory_sink.fail_next = True
    created = await authentik.client.post("/core/users/", json={"username": "bo", "name": "Bo"})
    assert created.status_code == 201
    assert "bo" not in directory_sink.users
    await authentik.client.post("/core/groups/", json={"name": "other"})
    assert "bo" in directory_sink.users and "other" in directory_sink.groups


async def test_failed_push_is_retried_without_a_further_write(
    authentik: AuthentikLab, directory_sink: RecordingSink
) -> None:
    """A directory that was down gets what it missed once it answers again, as from the outpost's refresh."""
    directory_sink.fail_next = True
    created = await authentik.client.post("/core/users/", json={"username": "cy", "name": "Cy"})
    assert created.status_code == 201
    assert "cy" not in directory_sink.users
    async with asyncio.timeout(10 * RETRY_S):
        while "cy" not in directory_sink.users:
            await asyncio.sleep(0.05)


async def test_concurrent_writes_are_each_in_the_directory_when_answered(
    authentik: AuthentikLab, directory_sink: RecordingSink
) -> None:
    """Writes queued behind a push share the next one, and none is answered before its entry is pushed."""

    async def create(n: int) -> None:
        created = await authentik.client.post("/core/users/", json={"username": f"u{n}", "name": f"U {n}"})
        assert created.status_code == 201
        assert f"u{n}" in directory_sink.users

    await asyncio.gather(*(create(n) for n in range(20)))
    assert {f"u{n}" for n in range(20)} <= set(directory_sink.users)
