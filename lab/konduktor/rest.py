"""A small Kubernetes REST client for the stand-in CLI: one kubeconfig context, JSON in and out.

It speaks plain HTTPS with httpx rather than load the ``kubernetes`` client, which takes a third of a second of CPU
to import: the stand-in is a process per command, and a worker runs hundreds of them in the tests."""

from __future__ import annotations

import json
import ssl
from typing import Any

import httpx

from tenantflow.lab.kubeapi.kubeconfig import KubeconfigError, read_endpoint
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH

Obj = dict[str, Any]


class CommandError(Exception):
    """A failure the CLI reports on stderr with exit code 1."""


def path(api_version: str, plural: str, name: str | None = None, namespace: str | None = None) -> str:
    """The REST path of a collection or one object."""
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    where = f"{root}/namespaces/{namespace}/{plural}" if namespace else f"{root}/{plural}"
    return f"{where}/{name}" if name else where


class Rest:
    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        try:
            endpoint = read_endpoint(kubeconfig, context)
        except KubeconfigError as exc:
            raise CommandError(str(exc)) from None
        self.server = endpoint.server
        verify = ssl.create_default_context(cadata=endpoint.ca_pem.decode()) if endpoint.ca_pem else True
        self.http = httpx.Client(
            base_url=endpoint.server, verify=verify, headers={"Authorization": f"Bearer {endpoint.token}"}, timeout=30
        )

    def call(
        self,
        method: str,
        where: str,
        body: Any = None,
        content_type: str = "application/json",
        query: list[tuple[str, str]] | None = None,
    ) -> tuple[int, Obj]:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        content = None if body is None else json.dumps(body)
        params = tuple(query or ())
        try:
            response = self.http.request(method, where, params=params, headers=headers, content=content)
        except httpx.HTTPError as exc:
            raise CommandError(f"{method} {self.server}{where}: {exc}") from None
        return response.status_code, dict(json.loads(response.content or b"{}"))

    def _ok(self, method: str, where: str, status: int, answer: Obj) -> Obj:
        if status >= 400:
            raise CommandError(f"{method} {where}: {status} {answer.get('message', '')}".rstrip())
        return answer

    def get(self, where: str) -> Obj | None:
        status, answer = self.call("GET", where)
        return None if status == 404 else self._ok("GET", where, status, answer)

    def list(self, where: str, selector: str = "") -> list[Obj]:
        status, answer = self.call("GET", where, query=[("labelSelector", selector)] if selector else None)
        if status == 404:
            return []
        return list(self._ok("GET", where, status, answer).get("items") or [])

    def create(self, where: str, obj: Obj) -> Obj:
        status, answer = self.call("POST", where, obj)
        return self._ok("POST", where, status, answer)

    def merge(self, where: str, patch: Obj) -> Obj:
        status, answer = self.call("PATCH", where, patch, MERGE_PATCH)
        return self._ok("PATCH", where, status, answer)

    def delete(self, where: str) -> bool:
        status, answer = self.call("DELETE", where)
        if status == 404:
            return False
        self._ok("DELETE", where, status, answer)
        return True

    def preferred_version(self, group: str) -> str | None:
        """The group's preferred served version from API discovery, or None when the group is not served."""
        found = self.get(f"/apis/{group}")
        return None if found is None else str(found["preferredVersion"]["version"])
