"""``python -m lab.serve DIR``: every HTTP stand-in and controller of the lab in one process.

Serves one Kubernetes API per context (HTTPS with a lab CA, so kubectl sends
tokens), the Authentik API (projecting into the real slapd) the Weka API and the webhook sink of term notices;
runs the controllers against the emulated clusters, waking them on ``ctx.changes`` (:mod:`lab.changes`: every
event of a cluster, every write to the Authentik and Weka stand-ins) rather than polling (a controller that
raises or returns is logged with its traceback and restarted; one that keeps dying stops ``lab serve`` with
status 1 and the reason in ``DIR/logs/lab-serve.log``, never silently); writes ``DIR/kubeconfig``, the
``konduktor`` stand-in ``DIR/bin/konduktor`` and ``DIR/lab.env`` once everything listens; stops on SIGTERM.
The emulators start from the state the last run on ``DIR`` saved (:mod:`lab.statefile`), or seeded when there
is none, and save it while they run and when they stop, so they agree with slapd and the Slurm database after a
restart.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from tenantflow.lab import controllers
from tenantflow.lab.authentik.api import SERVICE_KEY as AUTHENTIK_SERVICE
from tenantflow.lab.authentik.app import PLATFORM_TENANTS_GROUP
from tenantflow.lab.authentik.app import build_app as build_authentik
from tenantflow.lab.authentik.slapd_sink import SlapdSink
from tenantflow.lab.authentik.store import AuthentikStore
from tenantflow.lab.changes import Changes
from tenantflow.lab.config import LabConfig
from tenantflow.lab.context import LabContext
from tenantflow.lab.endpoints import LabEndpoints, konduktor_bin
from tenantflow.lab.enrollment_seed import hub_policies
from tenantflow.lab.httpbase import WRITE_METHODS, Handler
from tenantflow.lab.konduktor.wrapper import write_wrapper
from tenantflow.lab.kubeapi.auth import parse_policies
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.podexec import ExecHandler, ExecResult
from tenantflow.lab.kubeapi.server import build_app as build_kube
from tenantflow.lab.kubeapi.server import start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.kubeapi.tls import kept_cert
from tenantflow.lab.notify_sink import build_app as build_notify_sink
from tenantflow.lab.seed import seed_cluster
from tenantflow.lab.statefile import Saved, keep_saved, load, state_file
from tenantflow.lab.weka.app import build_app as build_weka
from tenantflow.lab.weka.service import SERVICE_KEY as WEKA_SERVICE

log = logging.getLogger("tenantflow.lab.serve")

Controller = Callable[[LabContext], Coroutine[Any, Any, None]]
RESTART_DELAY_S = 1.0
MAX_RESTARTS = 5


class ControllerDied(RuntimeError):
    """A controller kept failing: the lab cannot do what its real counterpart does, so it stops."""


def dispatch_exec(ctx: LabContext, context: str) -> ExecHandler:
    """Route ``pods/exec`` of one cluster to the handler registered for the pod."""

    async def handler(namespace: str, pod: str, container: str, argv: list[str], stdin: bytes) -> ExecResult:
        target = ctx.exec_handler_for(context, namespace, pod)
        if target is None:
            return ExecResult(stderr=f"lab: no exec handler for {context}:{namespace}/{pod}\n", exit_code=126)
        stdout, stderr, code = await target(namespace, pod, container, argv, stdin)
        return ExecResult(stdout=stdout, stderr=stderr, exit_code=code)

    return handler


def count_writes(*changes: Changes) -> Middleware:
    """Bump each of ``changes`` after each write request a stand-in served (one an injected fault stopped never
    gets here)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        finally:
            if request.method in WRITE_METHODS:
                for counter in changes:
                    counter.bump()

    return middleware


async def start_site(app: web.Application, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


def kube_store(config: LabConfig, context: str) -> Store:
    """The cluster as the last run on the state folder left it, else freshly seeded."""
    saved = load(state_file(config.state_dir, f"kube-{context}"))
    if saved is not None:
        return Store.restore(saved)
    store = Store()
    seed_cluster(store, context, ldap_bind_password=config.ldap_bind_password)
    return store


def saved_states(
    config: LabConfig, stores: dict[str, Store], authentik: web.Application, weka: web.Application, changes: Changes
) -> list[Saved]:
    """The stand-ins' state files. Weka has no revision of its own; its state changes by a write request (which
    bumps ``changes``) or by the csi-wekafs stand-in, whose mounts end in a write to the cluster (which does too),
    so the lab's change count stands in for it rather than a dump every check."""

    def version_of(store: Store) -> Callable[[], object]:
        return lambda: store.resource_version

    saved = [
        Saved(state_file(config.state_dir, f"kube-{context}"), store.dump, version_of(store))
        for context, store in stores.items()
    ]
    users = authentik[AUTHENTIK_SERVICE].store
    return [
        *saved,
        Saved(state_file(config.state_dir, "authentik"), users.dump, lambda: users.revision),
        Saved(state_file(config.state_dir, "weka"), weka[WEKA_SERVICE].dump, lambda: changes.revision),
    ]


async def serve(config: LabConfig, stop: asyncio.Event) -> None:
    stores = {context: kube_store(config, context) for context in config.contexts()}
    ctx = LabContext(
        state_dir=config.state_dir,
        stores=stores,
        slurm_env={"SLURM_CONF": str(config.slurm_conf)},
        partitions_file=config.partitions_file,
        slurm_operator=config.slurm_operator,
        ldap_url=config.ldap_url,
        ldap_bind_dn=config.ldap_bind_dn,
        ldap_bind_password=config.ldap_bind_password,
    )
    for store in stores.values():
        store.subscribe(ctx.changes.bump)
    cert = kept_cert(config.state_dir / "kube-ca.pem", config.state_dir / "kube-ca.key")
    runners: list[web.AppRunner] = []
    kube_contexts: list[KubeContext] = []
    for context, store in stores.items():
        policies = parse_policies(hub_policies(config.kube_tokens["hub-org-admin"])) if context == "hub" else None
        app = build_kube(store, name=f"kube-{context}", exec_handler=dispatch_exec(ctx, context), policies=policies)
        runner, url = await start_kube_api(app, port=config.kube_ports[context], ssl_context=cert.server_context())
        runners.append(runner)
        token = config.kube_tokens["hub-org-admin" if context == "hub" else context]
        kube_contexts.append(KubeContext(name=context, server=url, token=token, ca_pem=cert.cert_pem))
    sink = SlapdSink(config.ldap_url, config.ldap_admin_dn, config.ldap_admin_password)
    saved_authentik = load(state_file(config.state_dir, "authentik"))
    authentik = build_authentik(
        config.authentik_token,
        sink,
        seed_groups=(PLATFORM_TENANTS_GROUP,),
        store=AuthentikStore.restore(saved_authentik) if saved_authentik else None,
        version=config.authentik_version,
    )
    authentik.middlewares.append(count_writes(ctx.changes, ctx.directory))
    runners.append(await start_site(authentik, config.authentik_port))
    weka = build_weka(config.weka_username, config.weka_password, restored=load(state_file(config.state_dir, "weka")))
    weka.middlewares.append(count_writes(ctx.changes, ctx.storage))
    runners.append(await start_site(weka, config.weka_port))
    ctx.weka = weka[WEKA_SERVICE]
    notify_url = ""
    if config.notify_port is not None:
        runners.append(await start_site(build_notify_sink(), config.notify_port))
        notify_url = f"http://127.0.0.1:{config.notify_port}"
    saved = saved_states(config, stores, authentik, weka, ctx.changes)
    saver = asyncio.create_task(keep_saved(saved, stop))
    tasks = [asyncio.create_task(supervised(run, ctx), name=run.__module__) for run in controllers.CONTROLLERS]

    kubeconfig = write_kubeconfig(config.state_dir / "kubeconfig", kube_contexts, current="tenant-cluster")
    write_wrapper(konduktor_bin(config.state_dir).parent)
    LabEndpoints(
        state_dir=config.state_dir,
        kubeconfig=kubeconfig,
        kube_urls={c.name: c.server for c in kube_contexts},
        authentik_url=f"http://127.0.0.1:{config.authentik_port}",
        authentik_token=config.authentik_token,
        weka_url=f"http://127.0.0.1:{config.weka_port}",
        weka_username=config.weka_username,
        weka_password=config.weka_password,
        ldap_url=config.ldap_url,
        ldap_bind_password=config.ldap_bind_password,
        slurm_conf=config.slurm_conf,
        notify_url=notify_url,
        slurm_operator=config.slurm_operator,
    ).write()
    try:
        await until_stopped_or_failed(stop, tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for runner in reversed(runners):
            await runner.cleanup()
        await saver
        for item in saved:
            item.save_if_changed()
        sink.close()


async def supervised(run: Controller, ctx: LabContext, restarts: int = MAX_RESTARTS) -> None:
    """Run one controller for the life of the lab. One that raises or returns is logged with the reason and
    restarted after :data:`RESTART_DELAY_S`; after ``restarts`` restarts it raises :class:`ControllerDied`."""
    name = run.__module__
    for attempt in range(restarts + 1):
        try:
            await run(ctx)
            log.error("controller %s returned; it must run as long as the lab", name)
        except Exception:
            log.exception("controller %s died", name)
        if attempt < restarts:
            await asyncio.sleep(RESTART_DELAY_S)
            log.warning("controller %s: restart %d of %d", name, attempt + 1, restarts)
    raise ControllerDied(f"controller {name} died {restarts + 1} times; lab serve stops (see the log above)")


async def until_stopped_or_failed(stop: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """Wait for ``stop``; a controller task that ends first (it gave up) re-raises its error here."""
    stopping = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    for task in done - {stopping}:
        task.result()
        raise ControllerDied(f"controller {task.get_name()} ended; lab serve stops")


GC_THRESHOLDS = (7000, 20, 20)
"""The cyclic collector runs ten times less often than Python's default (700, 10, 10), after the imports are frozen
out of its scans: the emulators allocate a JSON tree per request and keep a large store, and the default thresholds
made the server spend 6% more CPU in the rollback tests."""


async def main_async(state_dir: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(LabConfig.read(state_dir), stop)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        asyncio.run(main_async(Path(sys.argv[1]).resolve()))
    except ControllerDied as exc:
        log.critical("%s", exc)
        sys.exit(1)


if __name__ == "__main__":
    main()
