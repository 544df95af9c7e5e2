"""The lab's stand-in for SchedMD's Slinky slurm-operator: a ``Controller``'s ``extraConf`` into slurmctld's config.

What it emulates, from https://github.com/SlinkyProject/slurm-operator (``api/v1beta1/controller_types.go`` and
``internal/builder/controllerbuilder/``):

- ``controller_config.go`` ``buildSlurmConf``: slurm.conf is the operator's own settings, its NodeSets, then, when
  ``spec.extraConf`` is not empty, a ``#`` line, ``### EXTRA CONFIG ###`` and ``extraConf`` verbatim ("ExtraConf is
  appended onto the end of the slurm.conf file"). The lab's slurm.conf plays the operator's part above that section
  (the lab's nodes and accounting); this stand-in rewrites only the section, so the real slurmctld reads it. The
  rendered ConfigMap reaches the pod ``ctx.volume_sync_s`` after the change, as a mounted ConfigMap does
  (https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically).
- ``scripts/reconfigure.sh``, the ``reconfigure`` sidecar of ``spec.inplaceReconfigure``: when the files under
  ``/etc/slurm`` change, one ``scontrol reconfigure`` in the slurmctld pod (through the pod's exec handler, so the
  lab counts it like any other command there). Without ``inplaceReconfigure`` Slinky recreates the slurmctld pod,
  which reads the new file at start (``controller_app.go``, ``getHashes``); the lab keeps its one slurmctld process
  and reconfigures it in place then too.
- The Controller's status is left alone: Slinky reports conditions there, not which configuration is live.

:func:`ensure_controller` seeds the ``Controller`` the platform's Helm release would have made (``slurm`` in
``slurm-control``, ``inplaceReconfigure: true``), served from the upstream CRD in ``lab/crds/``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tenantflow.lab.context import ExecFn
from tenantflow.lab.endpoints import SLINKY_CONTROLLER
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.store import ObjectKey, Store

log = logging.getLogger(__name__)

GROUP = "slinky.slurm.net"
RESOURCE = "controllers"
CONTROLLER = SLINKY_CONTROLLER
NAMESPACE = "slurm-control"
SECTION = "#\n### EXTRA CONFIG ###\n"
"""How ``buildSlurmConf`` opens the ``extraConf`` section (``config.NewPropertyRaw`` lines)."""


def with_extra_conf(slurm_conf: str, extra_conf: str) -> str:
    """``slurm_conf`` with its ``extraConf`` section replaced by ``extra_conf`` (dropped when empty)."""
    base = slurm_conf.split(SECTION, 1)[0]
    base = base if base.endswith("\n") else base + "\n"
    return base + (SECTION + extra_conf.rstrip("\n") + "\n" if extra_conf.strip() else "")


def partition_lines(extra_conf: str) -> dict[str, str]:
    """The ``PartitionName=`` lines of ``extra_conf``, by partition name."""
    found = {}
    for line in extra_conf.splitlines():
        key, _, name = (line.split() or [""])[0].partition("=")
        if key.lower() == "partitionname" and name:
            found[name] = line
    return found


class SlinkyOperator:
    """Renders the Controller's ``extraConf`` into slurm.conf and reconfigures slurmctld like the sidecar."""

    def __init__(
        self,
        store: Store,
        slurm_conf: Path,
        reconfigure: ExecFn,
        label: Callable[[Mapping[str, str]], None],
        sync_s: Callable[[], float] = lambda: 0.0,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = store
        self.slurm_conf = slurm_conf
        self.reconfigure = reconfigure
        self.label = label
        self.sync_s = sync_s
        self.active = active
        self.pending: set[asyncio.Task[None]] = set()
        self.loop = asyncio.get_running_loop()
        """The lab's loop, where rendering runs whichever thread wrote the store."""

    def ensure_controller(self) -> None:
        try:
            self.store.get(GROUP, RESOURCE, CONTROLLER, NAMESPACE)
        except ApiError as exc:
            if exc.code != 404:
                raise
            self.store.create(
                {
                    "apiVersion": f"{GROUP}/v1beta1",
                    "kind": "Controller",
                    "metadata": {"name": CONTROLLER, "namespace": NAMESPACE},
                    "spec": {
                        "clusterName": "production",
                        "slurmKeyRef": {"name": "slurm-auth-slurm", "key": "slurm.key"},
                        "jwtHs256KeyRef": {"name": "slurm-auth-jwths256", "key": "jwt_hs256.key"},
                        "inplaceReconfigure": True,
                    },
                },
                NAMESPACE,
            )

    def on_event(self, event_type: str, key: ObjectKey, obj: dict[str, Any]) -> None:
        if key.group != GROUP or key.resource != RESOURCE or key.namespace != NAMESPACE or key.name != CONTROLLER:
            return
        if not self.active():
            return
        self.loop.call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        delay = self.sync_s()
        if delay > 0:
            self.loop.call_later(delay, self.render_current)
        else:
            self.render_current()

    def render_current(self) -> None:
        """Render the Controller as the store holds it now (a lagging kubelet sync sees the latest version)."""
        try:
            spec = self.store.get(GROUP, RESOURCE, CONTROLLER, NAMESPACE).get("spec") or {}
        except ApiError as exc:
            if exc.code != 404:
                raise
            spec = {}
        extra = str(spec.get("extraConf") or "")
        self.label(partition_lines(extra))
        text = with_extra_conf(self.slurm_conf.read_text(), extra)
        if text == self.slurm_conf.read_text():
            return
        tmp = self.slurm_conf.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(self.slurm_conf)
        task = self.loop.create_task(self._reconfigure())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def _reconfigure(self) -> None:
        out, err, code = await self.reconfigure(
            NAMESPACE, "slurmctld-0", "reconfigure", ["scontrol", "reconfigure"], b""
        )
        if code != 0:
            log.warning("slinky reconfigure sidecar: scontrol reconfigure exited %s: %s", code, err or out)
