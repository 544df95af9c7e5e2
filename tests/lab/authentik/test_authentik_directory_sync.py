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
    writes: list[tuple[str, bool]] = field(default_factory=list)
    """Every upsert as (name, whether the entry last written under that name was passed)."""

    def _maybe_fail(self) -> None:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("slapd down")

    def upsert_user(self, user: DirectoryUser, previous: DirectoryUser | None) -> None:
        self._maybe_fail()
        assert previous == self.users.get(user.username)
        self.writes.append((user.username, previous is not None))
        self.users[user.username] = user

    def upsert_group(self, group: DirectoryGroup, previous: DirectoryGroup | None) -> None:
        self._maybe_fail()
        assert previous == self.groups.get(group.name)
        self.writes.append((group.name, previous is not None))
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


async def test_a_write_pushes_only_the_entries_it_changed_as_differences(
    authentik: AuthentikLab, directory_sink: RecordingSink
) -> None:
    """The projection is incremental: adding one user to a big group writes that user and that group only, with
    the group's last written entry (so the sink writes the one new member); other users and groups are untouched."""
    big = (await authentik.client.post("/core/groups/", json={"name": "big"})).json()
    await authentik.client.post("/core/groups/", json={"name": "other"})
    for n in range(30):
        await authentik.client.post("/core/users/", json={"username": f"m{n}", "name": "M", "groups": [big["pk"]]})
    directory_sink.writes.clear()

    new = (await authentik.client.post("/core/users/", json={"username": "new", "name": "New"})).json()
    await authentik.client.post(f"/core/groups/{big['pk']}/add_user/", json={"pk": new["pk"]})
    assert directory_sink.writes == [("new", False), ("new", True), ("big", True)]
    assert len(directory_sink.groups["big"].members) == 31

    directory_sink.writes.clear()
    await authentik.client.patch(f"/core/groups/{big['pk']}/", json={"name": "large"})
    assert "big" not in directory_sink.groups and directory_sink.groups["large"].members
    assert ("large", False) in directory_sink.writes
    assert all(
        directory_sink.users[f"m{n}"].member_of == ("cn=large,ou=groups,dc=auth,dc=example,dc=internal",)
        for n in range(30)
    )
    assert "other" not in {name for name, _ in directory_sink.writes}


async def test_a_name_freed_and_reused_between_pushes_ends_with_its_new_holder(
    authentik: AuthentikLab, directory_sink: RecordingSink
) -> None:
    """A rename whose push failed is retried with the next write, and the old name is not deleted from under
    the user who took it meanwhile."""
    ann = (await authentik.client.post("/core/users/", json={"username": "ann", "name": "Ann"})).json()
    directory_sink.fail_next = True
    await authentik.client.patch(f"/core/users/{ann['pk']}/", json={"username": "anne"})
    assert "anne" not in directory_sink.users
    await authentik.client.post("/core/users/", json={"username": "ann", "name": "Second Ann"})
    assert directory_sink.users["anne"].name == "Ann"
    assert directory_sink.users["ann"].name == "Second Ann"
