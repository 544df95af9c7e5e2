"""``tenantflow lab up`` / ``lab down``: start every stand-in on loopback, stop them all by PID.

``up`` installs missing Debian packages (as root), starts the real slapd and the
real Slurm stack (munged, MariaDB, slurmdbd, slurmctld, one slurmd per GPU
node), then ``python -m lab.serve`` for the HTTP stand-ins and controllers, and
waits for ``DIR/lab.env``. ``down`` stops everything recorded in ``DIR`` (newest
first) and leaves no process.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from tenantflow.lab.config import LabConfig
from tenantflow.lab.daemons.process import free_port, port_open, recorded, start_daemon, stop_all
from tenantflow.lab.daemons.slapd import start_slapd
from tenantflow.lab.daemons.slurm import DEFAULT_NODES, start_slurm
from tenantflow.lab.endpoints import KUBE_CONTEXTS, LabEndpoints

INSTALL_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "install-system-packages.sh"


def install_system_packages() -> None:
    """Install slapd, Slurm, MariaDB, munge... when missing (root only; a fast no-op otherwise)."""
    if os.geteuid() != 0:
        return
    subprocess.run(["bash", str(INSTALL_SCRIPT)], check=True, stdout=subprocess.DEVNULL)


def is_up(state_dir: Path) -> bool:
    return (state_dir / "lab.env").exists() and any(d.name == "lab-serve" for d in recorded(state_dir))


def up(state_dir: Path, timeout_s: float = 90.0) -> LabEndpoints:
    """Start the lab in ``state_dir`` (idempotent: an already running lab is returned as is)."""
    state_dir = state_dir.resolve()
    if is_up(state_dir):
        return LabEndpoints.load(state_dir)
    down(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    install_system_packages()
    try:
        slapd = start_slapd(state_dir, free_port())
        slurm = start_slurm(state_dir, DEFAULT_NODES, slurmd_nodes=DEFAULT_NODES)
        config = LabConfig(
            state_dir=state_dir, kube_ports={c: free_port() for c in KUBE_CONTEXTS},
            authentik_port=free_port(), authentik_token=secrets.token_urlsafe(24),
            weka_port=free_port(), weka_password=secrets.token_urlsafe(16),
            ldap_url=slapd.url, ldap_admin_dn=slapd.admin_dn, ldap_admin_password=slapd.admin_password,
            ldap_bind_dn=slapd.bind_dn, ldap_bind_password=slapd.bind_password,
            slurm_conf=slurm.slurm_conf, partitions_file=slurm.partitions_conf,
            kube_tokens={c: secrets.token_urlsafe(24) for c in (*KUBE_CONTEXTS, "hub-org-admin")})
        config.write()
        (state_dir / "lab.env").unlink(missing_ok=True)
        env_file = state_dir / "lab.env"
        start_daemon(state_dir, "lab-serve", [sys.executable, "-m", "tenantflow.lab.serve", str(state_dir)],
                     lambda: env_file.exists() and all(port_open(p)() for p in config.kube_ports.values()),
                     env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
                     timeout=timeout_s)
    except BaseException:
        down(state_dir)
        raise
    return LabEndpoints.load(state_dir)


def down(state_dir: Path) -> list[str]:
    """Stop every process recorded in ``state_dir``; return their names."""
    stopped = [d.name for d in stop_all(state_dir.resolve())] if state_dir.exists() else []
    (state_dir / "lab.env").unlink(missing_ok=True)
    return stopped
