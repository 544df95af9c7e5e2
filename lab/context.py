"""What the lab's in-process controllers and exec handlers are given when the lab starts.

A controller module exposes ``async def run(ctx: LabContext) -> None`` (a task
that lives as long as the lab) and reacts to the emulated API through
``ctx.stores[context].subscribe(...)``. Pods that answer ``kubectl exec`` are
registered with ``ctx.register_exec(context, namespace, pod_prefix, handler)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tenantflow.lab.changes import Changes

if TYPE_CHECKING:
    from tenantflow.lab.kubeapi.store import Store
    from tenantflow.lab.weka.service import WekaService

ExecFn = Callable[[str, str, str | None, list[str], bytes], Awaitable[tuple[str, str, int]]]
"""(namespace, pod, container, argv, stdin) -> (stdout, stderr, exit code)."""


@dataclass
class LabContext:
    state_dir: Path
    stores: dict[str, Store]
    slurm_env: dict[str, str] = field(default_factory=dict)
    """Environment (SLURM_CONF...) under which Slurm commands run on the host."""
    partitions_file: Path | None = None
    slurm_operator: str = "configmap"
    """The Slurm operator the lab plays (:mod:`lab.controllers.slurm`): ``configmap`` renders ConfigMap
    ``slurm-partitions`` into ``partitions_file``; ``slinky`` renders Slinky's ``Controller`` ``extraConf`` into
    slurm.conf and reconfigures as its sidecar does. Read at each change."""
    volume_sync_s: float = 0.0
    """How long a changed partitions ConfigMap takes to reach the slurmctld pod's files (on a cluster the kubelet's
    sync period plus its cache TTL, often 60-90 s; 0 in the lab unless a test wants the lag). Read at each change."""
    ldap_url: str = ""
    ldap_bind_dn: str = ""
    ldap_bind_password: str = ""
    ldap_base_dn: str = "dc=auth,dc=example,dc=internal"
    exec_handlers: dict[tuple[str, str, str], ExecFn] = field(default_factory=dict)
    weka: WekaService | None = None
    """The Weka emulator's state, which the csi-wekafs stand-in mounts (:mod:`lab.controllers.csi`)."""
    changes: Changes = field(default_factory=Changes)
    """Every write the lab sees (``lab serve`` wires it), for loops that sleep while the lab is idle."""
    directory: Changes = field(default_factory=Changes)
    """Writes to the Authentik stand-in only, the one writer of the outpost's directory: what the nsscache
    stand-in follows (a kube or Weka write cannot change a passwd entry, so it need not re-read the directory)."""
    storage: Changes = field(default_factory=Changes)
    """Changes of the Weka stand-in's state: its API's writes and the csi-wekafs stand-in's directories, what the
    Weka mounts stand-in follows (a kube or Authentik write cannot change a filesystem)."""

    def register_exec(self, context: str, namespace: str, pod_prefix: str, handler: ExecFn) -> None:
        self.exec_handlers[(context, namespace, pod_prefix)] = handler

    def exec_handler_for(self, context: str, namespace: str, pod: str) -> ExecFn | None:
        matches = [
            (len(prefix), fn)
            for (ctx, ns, prefix), fn in self.exec_handlers.items()
            if ctx == context and ns == namespace and pod.startswith(prefix)
        ]
        return max(matches, key=lambda item: item[0])[1] if matches else None
