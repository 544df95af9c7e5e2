"""Helpers for the Weka tests: a controllable clock and a handle on the running stand-in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

USERNAME = "admin"
PASSWORD = "lab-weka-password"


@dataclass
class FakeClock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class WekaLab:
    url: str
    api: httpx.AsyncClient
    clock: FakeClock

    async def login(self, username: str = USERNAME, password: str = PASSWORD, org: str = "Root") -> dict[str, Any]:
        response = await self.api.post("/login", json={"username": username, "password": password, "org": org})
        assert response.status_code == 200, response.text
        return dict(response.json()["data"])

    def client(self, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url + "/api/v2", headers={"Authorization": f"Bearer {token}"})
