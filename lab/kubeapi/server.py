"""The HTTP face of one emulated cluster: routes, auth, watch, and start-up.

:func:`build_app` serves a :class:`lab.kubeapi.store.Store` the way kube-apiserver
does, for the ``kubernetes`` Python client and ``kubectl``: discovery, OpenAPI v3
stubs, CRUD with list envelopes, PATCH (merge, strategic-merge, JSON patch),
server-side apply (:mod:`lab.kubeapi.applying`), ``fieldManager`` and ``metadata.managedFields``
(:mod:`lab.kubeapi.managedfields`), ``?watch=1`` streams, ``dryRun=All``, ``fieldValidation``, SelfSubjectAccessReview,
``pods/exec`` (websocket) and ``pods/log``. :func:`start_kube_api` runs it on
loopback and returns the runner and base URL.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any

from aiohttp import web

from tenantflow.lab.httpbase import make_app
from tenantflow.lab.kubeapi import discovery
from tenantflow.lab.kubeapi.auth import User, access_review, authorize, user_for
from tenantflow.lab.kubeapi.errors import ApiError, bad_request
from tenantflow.lab.kubeapi.media_types import APPLY_PATCH
from tenantflow.lab.kubeapi.patching import PATCH_TYPES, unsupported_patch
from tenantflow.lab.kubeapi.podexec import ExecHandler, LogProvider, annotation_logs, no_exec_handler, serve_exec
from tenantflow.lab.kubeapi.requestinfo import (
    TRUE,
    Target,
    field_manager,
    parse_target,
    read_body,
    verb_of,
    write_options,
)
from tenantflow.lab.kubeapi.selectors import field_selector, label_selector
from tenantflow.lab.kubeapi.store import ObjectKey, Store

STORE_KEY = web.AppKey("kube_store", Store)
SSAR = ("authorization.k8s.io", "selfsubjectaccessreviews")


def json_response(body: Any, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    quoted = (w.replace('"', '\\"') for w in warnings or [])
    headers = {"Warning": ", ".join(f'299 - "{w}"' for w in quoted)} if warnings else None
    return web.Response(text=json.dumps(body), status=status, content_type="application/json", headers=headers)


def status_response(err: ApiError) -> web.Response:
    return json_response(err.status(), err.code)


class KubeApi:
    """Request handlers bound to one store and its configuration."""

    def __init__(
        self, store: Store, exec_handler: ExecHandler, policies: dict[str, User], log_provider: LogProvider
    ) -> None:
        self.store = store
        self.exec_handler = exec_handler
        self.policies = policies
        self.log_provider = log_provider

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._route(request)
        except ApiError as err:
            return status_response(err)

    async def _route(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/")
        parts = [p for p in path.split("/") if p]
        registry = self.store.registry
        if path == "/version":
            return json_response(discovery.KUBERNETES_VERSION_INFO)
        if path == "/api":
            return json_response(discovery.api_versions(request.host))
        if path == "/apis":
            return json_response(discovery.api_group_list(registry))
        if path == "/openapi/v3":
            return json_response(discovery.openapi_v3_root(registry))
        if path.startswith("/openapi/v3/"):
            gv = parts[2:]
            doc = discovery.openapi_v3_doc(registry, "" if gv[0] == "api" else gv[1], gv[-1])
            return self._found(doc)
        if parts and parts[0] == "apis" and len(parts) == 2:
            return self._found(discovery.api_group(registry, parts[1]))
        if (parts[:1] == ["api"] and len(parts) == 2) or (parts[:1] == ["apis"] and len(parts) == 3):
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
            return self._found(discovery.api_resource_list(registry, group, version))
        if parts[:1] not in (["api"], ["apis"]):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        target = parse_target(self.store, parts)
        user = user_for(self.policies, request.headers.get("Authorization"))
        if target.rt.key == SSAR:
            if request.method != "POST":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
            return json_response(access_review(user, await read_body(request)), 201)
        authorize(user, target.attributes(verb_of(request, target)))
        return await self._resource(request, target)

    @staticmethod
    def _found(doc: dict[str, Any] | None) -> web.Response:
        if doc is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return json_response(doc)

    async def _resource(self, request: web.Request, t: Target) -> web.StreamResponse:
        store, rt, method = self.store, t.rt, request.method
        if t.sub in ("exec", "log"):
            pod = store.get("", "pods", t.name, t.namespace)
            if t.sub == "exec":
                return await serve_exec(request, pod, self.exec_handler)
            container = request.query.get("container") or ""
            return web.Response(text=self.log_provider(t.namespace, t.name, container, pod), content_type="text/plain")
        if method == "GET" and request.query.get("watch") in TRUE:
            return await self._watch(request, t)
        if method == "GET" and t.name:
            return json_response(t.present(store.get(rt.group, rt.plural, t.name, t.namespace)))
        if method == "GET":
            return self._list(request, t)
        warnings: list[str] = []
        opts = write_options(request)
        sub = t.sub or None
        if method == "POST" and not t.name:
            body = await read_body(request)
            if not isinstance(body, dict):
                raise bad_request("the body must be an object")
            body.setdefault("apiVersion", rt.api_version(t.version))
            body.setdefault("kind", rt.kind)
            manager = field_manager(request, "CreateOptions")
            created = store.create(body, t.namespace or None, warnings=warnings, manager=manager, **opts)
            return json_response(t.present(created), 201, warnings)
        if method == "PUT" and t.name:
            manager = field_manager(request, "UpdateOptions")
            body = await read_body(request)
            updated = store.replace(
                rt.group,
                rt.plural,
                t.name,
                body,
                t.namespace or None,
                subresource=sub,
                warnings=warnings,
                manager=manager,
                **opts,
            )
            return json_response(t.present(updated), 200, warnings)
        if method == "PATCH" and t.name and request.content_type == APPLY_PATCH:
            return await self._apply(request, t, opts, warnings)
        if method == "PATCH" and t.name:
            if request.content_type not in PATCH_TYPES:
                raise unsupported_patch()
            manager = field_manager(request, "PatchOptions")
            body = await read_body(request)
            patched = store.patch(
                rt.group,
                rt.plural,
                t.name,
                body,
                request.content_type,
                t.namespace or None,
                subresource=sub,
                warnings=warnings,
                manager=manager,
                **opts,
            )
            return json_response(t.present(patched), 200, warnings)
        if method == "DELETE":
            return await self._delete(request, t)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the resource")

    async def _apply(self, request: web.Request, t: Target, opts: dict[str, Any], warnings: list[str]) -> web.Response:
        """Server-side apply of the main resource (the lab applies to no subresource)."""
        manager = field_manager(request, "PatchOptions", apply=True)
        if t.sub:
            raise ApiError(405, "MethodNotAllowed", "the lab applies to main resources only, not to subresources")
        config = await read_body(request)
        obj, created = self.store.apply(
            t.rt.group,
            t.rt.plural,
            t.name,
            config,
            t.namespace or None,
            manager=manager,
            force=request.query.get("force") in TRUE,
            warnings=warnings,
            **opts,
        )
        return json_response(t.present(obj), 201 if created else 200, warnings)

    def _list(self, request: web.Request, t: Target) -> web.Response:
        items, rv = self.store.list_with_version(
            t.rt.group,
            t.rt.plural,
            t.namespace or None,
            request.query.get("labelSelector"),
            request.query.get("fieldSelector"),
        )
        return json_response(
            {
                "kind": f"{t.rt.kind}List",
                "apiVersion": t.rt.api_version(t.version),
                "metadata": {"resourceVersion": str(rv)},
                "items": [t.present(i) for i in items],
            }
        )

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        rt = t.rt
        options = await read_body(request) if request.can_read_body else {}
        pre = options.get("preconditions") or {}
        dry = request.query.get("dryRun") == "All" or "All" in (options.get("dryRun") or [])
        if not t.name:
            items = self.store.list(
                rt.group,
                rt.plural,
                t.namespace or None,
                request.query.get("labelSelector"),
                request.query.get("fieldSelector"),
            )
            gone = [
                self.store.delete(
                    rt.group, rt.plural, i["metadata"]["name"], i["metadata"].get("namespace"), dry_run=dry
                )
                for i in items
            ]
            return json_response(
                {
                    "kind": f"{rt.kind}List",
                    "apiVersion": rt.api_version(t.version),
                    "metadata": {},
                    "items": [t.present(g) for g in gone],
                }
            )
        obj = self.store.delete(
            rt.group,
            rt.plural,
            t.name,
            t.namespace or None,
            dry_run=dry,
            precondition_rv=pre.get("resourceVersion"),
            precondition_uid=pre.get("uid"),
        )
        if rt.delete_returns_object or obj["metadata"].get("finalizers"):
            return json_response(t.present(obj))
        details = {"name": t.name, "kind": rt.plural, "uid": obj["metadata"]["uid"]}
        if rt.group:
            details["group"] = rt.group
        return json_response(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
        )

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        labels = label_selector(request.query.get("labelSelector"))
        fields = field_selector(request.query.get("fieldSelector"))
        fields_by_name = field_selector(f"metadata.name={t.name}") if t.name else fields
        rv_param = request.query.get("resourceVersion", "")
        since = int(rv_param) if rv_param not in ("", "0") else None
        timeout = float(request.query.get("timeoutSeconds") or 1800)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, ObjectKey, dict[str, Any]]] = asyncio.Queue()

        def on_event(event_type: str, key: ObjectKey, obj: dict[str, Any]) -> None:
            if key[:2] != t.rt.key or (t.namespace and key.namespace != t.namespace):
                return
            if labels(obj) and fields(obj) and fields_by_name(obj):
                loop.call_soon_threadsafe(queue.put_nowait, (event_type, key, obj))

        unsubscribe = self.store.subscribe(on_event, replay=since is None, since=since)
        response = web.StreamResponse(headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        try:
            await response.prepare(request)
            deadline = loop.time() + timeout
            while loop.time() < deadline:
                try:
                    event_type, _, obj = await asyncio.wait_for(queue.get(), min(1.0, deadline - loop.time()))
                except TimeoutError:
                    if request.transport is None or request.transport.is_closing():
                        break
                    continue
                line = {"type": event_type, "object": t.present(dict(obj))}
                await response.write(json.dumps(line).encode() + b"\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            unsubscribe()
        return response


def build_app(
    store: Store,
    *,
    name: str,
    exec_handler: ExecHandler | None = None,
    policies: dict[str, User] | None = None,
    log_provider: LogProvider | None = None,
) -> web.Application:
    """An aiohttp app serving ``store`` as a Kubernetes API (plus the lab's ``/_lab`` routes)."""
    app = make_app(name, snapshot=store.snapshot)
    api = KubeApi(store, exec_handler or no_exec_handler, policies or {}, log_provider or annotation_logs)
    app[STORE_KEY] = store
    app.router.add_route("*", "/{tail:.*}", api.handle)
    return app


async def start_kube_api(
    app: web.Application, host: str = "127.0.0.1", port: int = 0, ssl_context: ssl.SSLContext | None = None
) -> tuple[web.AppRunner, str]:
    """Start ``app`` on ``host:port`` (0 = any free port); returns the runner and its base URL.

    Plain HTTP by default; pass ``ssl_context`` (see :mod:`lab.kubeapi.tls`) for
    HTTPS, which kubectl needs before it sends a bearer token.
    """
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    await site.start()
    server = site._server
    assert server is not None and server.sockets  # type: ignore[attr-defined]
    bound = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    return runner, f"{'https' if ssl_context else 'http'}://{host}:{bound}"
