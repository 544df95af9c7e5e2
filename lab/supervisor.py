"""``tenantflow lab up`` / ``lab down``: start every stand-in on loopback, stop them all by PID.

``up`` installs missing Debian packages (as root), starts the real slapd and the
real Slurm stack (munged, MariaDB, slurmdbd, slurmctld, one slurmd per GPU
node), then ``python -m lab.serve`` for the HTTP stand-ins and controllers, and
waits for ``DIR/lab.env``. ``down`` stops everything recorded in ``DIR`` (newest
first) and leaves no process.

A later ``up`` on the same folder continues the same world: slapd and the Slurm database keep their
data, the HTTP stand-ins restore what they saved (:mod:`lab.statefile`), the credentials of the last run
are kept (its Kubernetes Secrets, Weka users and tokens expect them) and so are its addresses (the
Kubernetes APIs, Authentik, Weka, slapd) when their ports are free again, so a running worker and its
cached clients carry on.
``up(reset=True)`` (``tenantflow lab up --reset``) stops the lab, wipes the folder and starts fresh. A
folder whose directory and accounting have data but whose stand-ins saved none (a lab from before they
did) is refused with :class:`LabStateError`, since Authentik would hand out uid numbers LDAP still holds.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from tenantflow.lab.authentik.versions import AUTHENTIK_CURRENT
from tenantflow.lab.config import LabConfig
from tenantflow.lab.daemons.process import free_port, is_running, port_open, recorded, start_daemon, stop_all
from tenantflow.lab.daemons.slapd import start_slapd
from tenantflow.lab.daemons.slurm import DEFAULT_NODES, start_slurm
from tenantflow.lab.endpoints import KUBE_CONTEXTS, LabEndpoints
from tenantflow.lab.statefile import state_file

INSTALL_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "install-system-packages.sh"
LAB_MARKERS = ("lab.json", "logs", "pids", "ldap", "slurm", "state")
"""What ``up`` leaves in a state folder: a folder with none of these is not wiped by ``reset``."""


class LabStateError(RuntimeError):
    """The state folder cannot be used as it is (the message says why and names ``--reset``)."""


def install_system_packages() -> None:
    """Install slapd, Slurm, MariaDB, munge... when missing (root only; a fast no-op otherwise)."""
    if os.geteuid() != 0:
        return
    subprocess.run(["bash", str(INSTALL_SCRIPT)], check=True, stdout=subprocess.DEVNULL)


def is_up(state_dir: Path) -> bool:
    """The lab's ``lab serve`` runs (one that stopped, say because a controller kept dying, is not up)."""
    return (state_dir / "lab.env").exists() and any(
        d.name == "lab-serve" and is_running(d) for d in recorded(state_dir)
    )


def reuse_port(port: int | None) -> int:
    """``port`` when it can be listened on again (as the lab's servers do, with SO_REUSEADDR), else a free one."""
    if port is not None:
        with contextlib.suppress(OSError), socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            return port
    return free_port()


def kept_settings(previous: LabConfig | None) -> dict[str, Any]:
    """The HTTP stand-ins' ports and credentials: the last run's on this folder (ports when free), else new."""
    if previous is None:
        credentials: dict[str, Any] = {
            "authentik_token": secrets.token_urlsafe(24),
            "weka_password": secrets.token_urlsafe(16),
            "kube_tokens": {c: secrets.token_urlsafe(24) for c in (*KUBE_CONTEXTS, "hub-org-admin")},
        }
    else:
        credentials = previous.model_dump(include={"authentik_token", "weka_password", "kube_tokens"})
    return {
        "kube_ports": {c: reuse_port(previous.kube_ports.get(c) if previous else None) for c in KUBE_CONTEXTS},
        "authentik_port": reuse_port(previous.authentik_port if previous else None),
        "weka_port": reuse_port(previous.weka_port if previous else None),
        "notify_port": reuse_port(previous.notify_port if previous else None),
        **credentials,
    }


def wipe(state_dir: Path) -> None:
    """Remove a lab's state folder (stopped first); refuse a folder the lab did not make."""
    if not state_dir.exists():
        return
    if any(state_dir.iterdir()) and not any((state_dir / marker).exists() for marker in LAB_MARKERS):
        raise LabStateError(
            f"{state_dir} does not look like a lab state folder (none of {', '.join(LAB_MARKERS)}); not wiping it"
        )
    down(state_dir)
    shutil.rmtree(state_dir)


def check_reusable(state_dir: Path) -> None:
    """Refuse a folder whose slapd and Slurm have data while its HTTP stand-ins saved none."""
    if (state_dir / "lab.json").exists() and not state_file(state_dir, "authentik").exists():
        raise LabStateError(
            f"{state_dir} holds a lab whose LDAP directory and Slurm database have data but whose Authentik, Weka and "
            "Kubernetes stand-ins saved no state: they would start empty and Authentik would hand out uid numbers "
            f"LDAP still holds. Start fresh with `tenantflow lab up --reset --state-dir {state_dir}` "
            "(wipes the folder)."
        )


def up(
    state_dir: Path,
    timeout_s: float = 90.0,
    *,
    reset: bool = False,
    authentik_version: str | None = None,
    slurm_operator: Literal["configmap", "slinky"] | None = None,
) -> LabEndpoints:
    """Start the lab in ``state_dir``, continuing the world the last run there left.

    ``authentik_version`` is the Authentik release the stand-in plays (:data:`lab.authentik.versions.MODES`);
    by default the last run's on this folder, else current. ``slurm_operator`` is the Slurm operator it plays
    (:data:`lab.config.SLURM_OPERATORS`); by default the last run's, else ``configmap``.

    Idempotent: an already running lab is returned as is, unless ``reset``, which stops it, wipes the
    folder and starts a fresh lab.
    """
    state_dir = state_dir.resolve()
    if reset:
        wipe(state_dir)
    if is_up(state_dir):
        running_config = LabConfig.read(state_dir)
        running = running_config.authentik_version
        if authentik_version not in (None, running):
            raise LabStateError(
                f"the lab in {state_dir} is up playing Authentik {running}; stop it "
                f"(`tenantflow lab down`) to start it as {authentik_version}"
            )
        if slurm_operator not in (None, running_config.slurm_operator):
            raise LabStateError(
                f"the lab in {state_dir} is up playing the {running_config.slurm_operator} Slurm operator; stop it "
                f"(`tenantflow lab down`) to start it as {slurm_operator}"
            )
        return LabEndpoints.load(state_dir)
    check_reusable(state_dir)
    down(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    install_system_packages()
    try:
        previous = LabConfig.read(state_dir) if (state_dir / "lab.json").exists() else None
        slapd = start_slapd(state_dir, reuse_port(urlsplit(previous.ldap_url).port if previous else None))
        slurm = start_slurm(state_dir, DEFAULT_NODES, slurmd_nodes=DEFAULT_NODES)
        config = LabConfig(
            state_dir=state_dir,
            **kept_settings(previous),
            ldap_url=slapd.url,
            ldap_admin_dn=slapd.admin_dn,
            ldap_admin_password=slapd.admin_password,
            ldap_bind_dn=slapd.bind_dn,
            ldap_bind_password=slapd.bind_password,
            slurm_conf=slurm.slurm_conf,
            partitions_file=slurm.partitions_conf,
            authentik_version=authentik_version or (previous.authentik_version if previous else AUTHENTIK_CURRENT),
            slurm_operator=slurm_operator or (previous.slurm_operator if previous else "configmap"),
        )
        config.write()
        (state_dir / "lab.env").unlink(missing_ok=True)
        env_file = state_dir / "lab.env"
        start_daemon(
            state_dir,
            "lab-serve",
            [sys.executable, "-m", "tenantflow.lab.serve", str(state_dir)],
            lambda: env_file.exists() and all(port_open(p)() for p in config.kube_ports.values()),
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            timeout=timeout_s,
        )
    except BaseException:
        down(state_dir)
        raise
    return LabEndpoints.load(state_dir)


def down(state_dir: Path) -> list[str]:
    """Stop every process recorded in ``state_dir``; return their names."""
    stopped = [d.name for d in stop_all(state_dir.resolve())] if state_dir.exists() else []
    (state_dir / "lab.env").unlink(missing_ok=True)
    return stopped
