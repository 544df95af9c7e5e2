"""The lab's Slurm side: the Slurm-operator stand-in and the exec handler of the slurmctld pod.

Which operator the lab plays is its own setting, ``ctx.slurm_operator`` (``slurm_operator`` in ``lab.json``, read
at each change): ``configmap`` (below) or ``slinky`` (:mod:`lab.controllers.slinky`, the Controller's
``extraConf`` rendered into slurm.conf, with Slinky's reconfigure sidecar); both label the slurmd pods as below.

ConfigMap operator: the ConfigMap ``slurm-control/slurm-partitions`` (one ``<slug>.conf`` key
per partition line, created empty if missing) is rendered into
``ctx.partitions_file`` (pulled into slurm.conf by ``Include``), ``ctx.volume_sync_s`` after the change
when set (the kubelet brings a changed ConfigMap volume into a pod after its sync period plus its cache TTL,
https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically;
what is rendered then is the ConfigMap as it is by that time); then the ConfigMap
is annotated with ``slurm.tenantflow.io/rendered-hash`` = the hash of the data it
rendered, so a client knows when its change is live and may ``scontrol
reconfigure``. Data that is not a ``PartitionName=`` line is refused with
``slurm.tenantflow.io/render-error`` and nothing is rendered. Those annotations are the
lab's own bookkeeping: tenantflow never reads them (it confirms a partition by what
``scontrol show partition`` reports). Like the SUNK chart's per-tenant NodeSet, the
operator labels the slurmd pods of each partition's nodes
``app.kubernetes.io/managed-by=<partition>`` (and drops the label when the node leaves).
The pitfall switches (:mod:`lab.pitfalls`) act here: ``short_max_time`` renders every
partition with ``MaxTime=12:00:00``, ``wrong_node_labels`` labels the pods ``tenant=<partition>``
instead, ``acs_on``, ``no_constrain_devices``, ``scratch_missing`` and ``mig_on`` change the environment jobs and
execs run in.

Exec: commands run in pods ``slurmctld-*`` / ``slurmd-*`` of ``slurm-control`` run
for real on the host under ``ctx.slurm_env``, argv passed directly (no shell),
only for an allow-list of Slurm clients plus ``getent``, ``nvidia-smi`` (a GPU node's slurmd container has the
driver's tools) and ``cat`` (``cat`` only
below the lab's job directory, the lab's home root, or the home of the file's owner:
where jobs write their output; and slurm.conf and the partitions file it includes, which the
slurmctld container of a real cluster reads from its mounted configuration too).
The working directory is that job directory; ``lab/bin`` (stand-in ``nvidia-smi``,
``all_reduce_perf`` and ``df``, since the lab has no GPU and no Weka client) leads
``PATH`` and ``LAB_MOUNT_TABLE`` names the stand-in Weka mounts; ``sbatch`` exports
both to the jobs.

The pods' userland: like SUNK's nsscache sidecar, :mod:`lab.daemons.host_users` keeps
the lab's extrausers files (and the host's) in step with the lab's LDAP outpost;
commands run in slurmctld's mount namespace (``nsenter``), where those files are
``/var/lib/extrausers``, so ``getent``, ``sbatch --uid`` and slurmd resolve tenant
users with the login pod's uid/gid and a home under ``<state>/home``; :mod:`lab.daemons.weka_mounts` keeps the
stand-in ``/scratch/<slug>`` mounts in step with the Weka emulator.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import pwd
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tenantflow.lab import pitfalls
from tenantflow.lab.config import LabConfig
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers import slinky
from tenantflow.lab.controllers.slurmd_labels import label_nodesets
from tenantflow.lab.daemons import host_users, weka_mounts
from tenantflow.lab.daemons.process import is_running, pids_dir, recorded
from tenantflow.lab.daemons.slurm import LAB_BIN
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.lab.kubeapi.store import ObjectKey, Store

log = logging.getLogger(__name__)

CONTEXT = "tenant-cluster"
NAMESPACE = "slurm-control"
CONFIGMAP = "slurm-partitions"
ALLOWED_COMMANDS = frozenset(
    {"sacctmgr", "scontrol", "sinfo", "squeue", "sbatch", "sacct", "scancel", "srun", "getent", "cat", "nvidia-smi"}
)
EXEC_TIMEOUT_S = 120.0
RENDERED_ANNOTATION = "slurm.tenantflow.io/rendered-hash"
RENDER_ERROR_ANNOTATION = "slurm.tenantflow.io/render-error"


def job_dir(ctx: LabContext) -> Path:
    """Where commands run and smoke jobs write their output (world-writable, sticky, like /tmp)."""
    path = ctx.state_dir / "slurm" / "jobs"
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o1777)
    return path


def exec_env(ctx: LabContext) -> dict[str, str]:
    env = {**os.environ, **ctx.slurm_env}
    env["PATH"] = f"{LAB_BIN}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env["LAB_MOUNT_TABLE"] = str(weka_mounts.mount_table(ctx.state_dir))
    return env


def config_files(ctx: LabContext) -> tuple[Path, ...]:
    """The configuration files slurmctld reads: ``SLURM_CONF`` and the partitions file it includes."""
    conf = ctx.slurm_env.get("SLURM_CONF")
    files = (Path(conf) if conf else None, ctx.partitions_file)
    return tuple(f.resolve() for f in files if f is not None)


def pitfall_env(state_dir: Path | None) -> dict[str, str]:
    """What the switched-on node pitfalls change in the environment of the commands and jobs."""
    on = pitfalls.active(state_dir)
    env = {"LAB_NCCL_BUSBW_GBPS": pitfalls.ACS_ON_BUSBW_GBPS} if pitfalls.Pitfall.acs_on in on else {}
    if pitfalls.Pitfall.no_constrain_devices in on:
        env["LAB_CONSTRAIN_DEVICES"] = "no"
    if pitfalls.Pitfall.scratch_missing in on:
        env["LAB_MOUNT_TABLE"] = "/nonexistent/lab-mounts"
    if pitfalls.Pitfall.mig_on in on:
        env["LAB_MIG"] = "on"
    return env


def in_pod_view(state_dir: Path | None, argv: list[str]) -> list[str]:
    """``argv`` entering slurmctld's mount namespace (the pods' view of the users), when the lab recorded it."""
    daemons = recorded(state_dir) if state_dir and pids_dir(state_dir).is_dir() else []
    ctld = next((d for d in daemons if d.name == "slurmctld" and is_running(d)), None)
    return argv if ctld is None else ["nsenter", f"--mount=/proc/{ctld.pid}/ns/mnt", "--", *argv]


class SlurmExec:
    """Runs allow-listed commands of the slurmctld/slurmd pods on the host; remembers every argv."""

    def __init__(
        self, env: dict[str, str], workdir: Path, readable: tuple[Path, ...] = (), state_dir: Path | None = None
    ) -> None:
        self.env = env
        self.workdir = workdir
        self.state_dir = state_dir
        self.readable = (workdir, *readable)
        self.history: list[list[str]] = []

    def _refuse(self, argv: list[str]) -> str | None:
        if not argv or argv[0] not in ALLOWED_COMMANDS:
            return f"lab slurmctld pod: {argv[0] if argv else '(empty)'} is not available here\n"
        if argv[0] == "cat":
            paths = [Path(a).resolve() for a in argv[1:]]
            if not paths or any(a.startswith("-") for a in argv[1:]) or not all(map(self._readable, paths)):
                return f"lab slurmctld pod: cat only reads files below {', '.join(map(str, self.readable))}\n"
        return None

    def _readable(self, path: Path) -> bool:
        if any(path.is_relative_to(root) for root in self.readable):
            return True
        try:
            owner = path.stat().st_uid
            return owner >= host_users.MIN_ID and path.is_relative_to(pwd.getpwuid(owner).pw_dir)
        except (OSError, KeyError):
            return False

    def _in_pod(self, argv: list[str]) -> list[str]:
        return in_pod_view(self.state_dir, argv)

    async def __call__(
        self, namespace: str, pod: str, container: str | None, argv: list[str], stdin: bytes
    ) -> tuple[str, str, int]:
        refused = self._refuse(argv)
        if refused:
            return "", refused, 126
        self.history.append(list(argv))
        proc = await asyncio.create_subprocess_exec(
            *self._in_pod(argv),
            cwd=self.workdir,
            env={**self.env, **pitfall_env(self.state_dir)},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), EXEC_TIMEOUT_S)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return "", f"lab: {argv[0]} timed out after {EXEC_TIMEOUT_S:.0f} s\n", 124
        return out.decode(errors="replace"), err.decode(errors="replace"), proc.returncode or 0


class PartitionsOperator:
    """Renders the partitions ConfigMap into the partitions file and annotates what it rendered."""

    def __init__(
        self,
        store: Store,
        partitions_file: Path,
        state_dir: Path | None = None,
        sync_s: Callable[[], float] = lambda: 0.0,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = store
        self.partitions_file = partitions_file
        self.state_dir = state_dir
        self.sync_s = sync_s
        self.active = active

    def ensure_configmap(self) -> None:
        try:
            self.store.get("", "configmaps", CONFIGMAP, NAMESPACE)
        except ApiError as exc:
            if exc.code != 404:
                raise
            self.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": CONFIGMAP,
                        "namespace": NAMESPACE,
                        "labels": {"app.kubernetes.io/managed-by": "slurm-operator"},
                    },
                    "data": {},
                },
                NAMESPACE,
            )

    def on_event(self, event_type: str, key: ObjectKey, obj: dict[str, Any]) -> None:
        if key.resource != "configmaps" or key.namespace != NAMESPACE or key.name != CONFIGMAP or not self.active():
            return
        delay = self.sync_s()
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self.render_current)
            return
        self.render(event_type, obj)

    def render_current(self) -> None:
        """Render the ConfigMap as the store holds it now (a lagging kubelet sync sees the latest version)."""
        try:
            obj = self.store.get("", "configmaps", CONFIGMAP, NAMESPACE)
        except ApiError as exc:
            if exc.code != 404:
                raise
            self.render("DELETED", {})
            return
        self.render("MODIFIED", obj)

    def render(self, event_type: str, obj: dict[str, Any]) -> None:
        data = {} if event_type == "DELETED" else dict(obj.get("data") or {})
        bad = sorted(k for k, v in data.items() if not k.endswith(".conf") or not _partition_line(v))
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if bad:
            message = f"refused keys {', '.join(bad)}: each <name>.conf must be one PartitionName= line"
            if annotations.get(RENDER_ERROR_ANNOTATION) != message:
                self._annotate({RENDER_ERROR_ANNOTATION: message})
            return
        digest = rendered_hash(data)
        text = partitions_conf(data, pitfalls.is_on(self.state_dir, pitfalls.Pitfall.short_max_time))
        label_nodesets(self.store, self.state_dir, {k.removesuffix(".conf"): v for k, v in data.items()})
        if not self.partitions_file.exists() or self.partitions_file.read_text() != text:
            tmp = self.partitions_file.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(self.partitions_file)
        if event_type != "DELETED" and (
            annotations.get(RENDERED_ANNOTATION) != digest or RENDER_ERROR_ANNOTATION in annotations
        ):
            self._annotate({RENDERED_ANNOTATION: digest, RENDER_ERROR_ANNOTATION: None})

    def _annotate(self, annotations: dict[str, str | None]) -> None:
        try:
            self.store.patch(
                "",
                "configmaps",
                CONFIGMAP,
                {"metadata": {"annotations": annotations}},
                MERGE_PATCH,
                namespace=NAMESPACE,
            )
        except ApiError as exc:
            log.warning("slurm operator: could not annotate %s/%s: %s", NAMESPACE, CONFIGMAP, exc)


def rendered_hash(data: Mapping[str, str]) -> str:
    """The operator's digest of what it rendered: the first 32 hex digits of the SHA-256 of the data as
    compact JSON with sorted keys."""
    body = json.dumps(dict(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def partitions_conf(data: Mapping[str, str], short_max_time: bool = False) -> str:
    """The ``partitions.conf`` the operator renders: a header, then each ``<name>.conf`` value in key order
    (with the ``short_max_time`` pitfall, every ``MaxTime=`` forced to :data:`lab.pitfalls.SHORT_MAX_TIME`)."""
    lines = ["# rendered from ConfigMap slurm-partitions; do not edit"]
    lines += [data[key].strip() for key in sorted(data) if key.endswith(".conf")]
    if short_max_time:
        lines = [re.sub(r"\bMaxTime=\S+", f"MaxTime={pitfalls.SHORT_MAX_TIME}", line) for line in lines]
    return "\n".join(lines) + "\n"


def _partition_line(value: str) -> bool:
    line = value.strip()
    return line.startswith("PartitionName=") and "\n" not in line and "Include" not in line


def _sidecars(ctx: LabContext) -> list[asyncio.Task[None]]:
    """nsscache from the LDAP outpost and the Weka mounts, when the lab has them."""
    tasks = []
    if ctx.ldap_url:
        tasks.append(
            asyncio.create_task(
                host_users.sync_loop(
                    ctx.ldap_url, ctx.ldap_bind_dn, ctx.ldap_bind_password, ctx.state_dir, ctx.directory
                ),
                name="host-users",
            )
        )
    if (ctx.state_dir / "lab.json").exists():
        weka_url = f"http://127.0.0.1:{LabConfig.read(ctx.state_dir).weka_port}"
        tasks.append(
            asyncio.create_task(weka_mounts.sync_loop(weka_url, ctx.state_dir, ctx.storage), name="weka-mounts")
        )
    return tasks


async def watch(sidecars: list[asyncio.Task[None]]) -> None:
    """Wait for ever; a sidecar that ends (they loop until cancelled) ends the controller with its error, so
    ``lab serve`` logs it and restarts the controller with fresh sidecars."""
    if not sidecars:
        await asyncio.Event().wait()
    done, _ = await asyncio.wait(sidecars, return_when=asyncio.FIRST_COMPLETED)
    for task in done:
        task.result()
    raise RuntimeError(f"sidecar {', '.join(sorted(t.get_name() for t in done))} stopped")


async def run(ctx: LabContext) -> None:
    store = ctx.stores[CONTEXT]
    handler = SlurmExec(
        exec_env(ctx), job_dir(ctx), (host_users.home_root(ctx.state_dir), *config_files(ctx)), ctx.state_dir
    )
    for prefix in ("slurmctld-", "slurmd-"):
        ctx.register_exec(CONTEXT, NAMESPACE, prefix, handler)
    unsubscribes = []
    slurm_conf = ctx.slurm_env.get("SLURM_CONF")
    if slurm_conf:
        slinky_operator = slinky.SlinkyOperator(
            store,
            Path(slurm_conf),
            handler,
            lambda lines: label_nodesets(store, ctx.state_dir, lines),
            lambda: ctx.volume_sync_s,
            lambda: ctx.slurm_operator == "slinky",
        )
        if ctx.slurm_operator == "slinky":
            slinky_operator.ensure_controller()
        unsubscribes.append(store.subscribe(slinky_operator.on_event, replay=True))
    if ctx.partitions_file is not None:
        operator = PartitionsOperator(
            store,
            ctx.partitions_file,
            ctx.state_dir,
            lambda: ctx.volume_sync_s,
            lambda: ctx.slurm_operator == "configmap",
        )
        if ctx.slurm_operator == "configmap":
            operator.ensure_configmap()
        unsubscribes.append(store.subscribe(operator.on_event, replay=True))
    sidecars: list[asyncio.Task[None]] = []
    try:
        sidecars += _sidecars(ctx)
        await watch(sidecars)
    finally:
        for unsubscribe in unsubscribes:
            unsubscribe()
        for task in sidecars:
            task.cancel()
        await asyncio.gather(*sidecars, return_exceptions=True)
