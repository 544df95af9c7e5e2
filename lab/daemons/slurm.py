"""Run a real Slurm accounting stack (munged, MariaDB, slurmdbd, slurmctld) with all state in one folder.

:func:`start_slurm` lays out ``<state_dir>/slurm/`` (configs rendered from ``slurm.template.conf`` and
``slurmdbd.template.conf``, MariaDB datadir, munge key and socket, Slurm state), starts the daemons
in order, registers cluster ``production`` in accounting, and returns a :class:`SlurmHandle` whose
``env`` (``SLURM_CONF``) makes the host's ``sacctmgr``, ``scontrol``, ``sinfo`` and ``sbatch`` talk
to it. The GPU nodes are ``State=CLOUD`` with ``Gres=gpu:<n>`` and need no slurmd (``sinfo`` shows
them ``idle~``); tenant partitions are rendered into ``partitions.conf`` (pulled in by ``Include``)
and applied with :meth:`SlurmHandle.reconfigure`, as the runbook's step 4d does through the
Slurm operator. ``slurmd_nodes`` additionally runs a real slurmd for some nodes so jobs execute:
Debian's Slurm runs several slurmd per host when each node has its own ``Port`` (every node gets
``NodeAddr=127.0.0.1 Port=<free port>``; ``slurmd -N <node>``), and ``gres.conf`` points each node's
GPUs at fake character devices (``dev/<node>/nvidia[0-7]``, copies of /dev/null) so ``--gres=gpu:N``
allocates and sets ``CUDA_VISIBLE_DEVICES``. Jobs scheduled on a node without slurmd stay in
CONFIGURING until ``ResumeTimeout`` and then fail, so smoke jobs belong on ``slurmd_nodes``.
Jobs run on this host as the submitting user: ``hostname`` prints the host's name (``$SLURMD_NODENAME``
is the node), ``sbatch --wrap`` scripts run under /bin/sh (dash: no ``set -o pipefail``), and an
``OverSubscribe=EXCLUSIVE`` partition hands a job all of a node's GPUs even for ``--gres=gpu:1``.
``srun --mpi=pmix`` works (Debian's libpmix-dev provides the libpmix.so the plugin loads); each node's
``TmpFS`` is its own ``tmp/<node>`` so the PMIx client directories of the slurmd of one host do not collide.
slurmctld and every slurmd run in a private mount namespace that sees the lab's own user files as
``/var/lib/extrausers`` (:func:`lab.daemons.host_users.in_lab_namespace`), so tenant users resolve
there as on SUNK's slurmd pods; jobs run as the user with ``--gid`` and a writable ``--chdir`` (a job
whose working directory or output path the user cannot reach dies at launch with ``ExitCode=0:53``).
A restart on the same state folder keeps the accounting database and Slurm state.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import stat
import subprocess
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from tenantflow.lab.daemons.host_users import NAMESPACE_SLURM_DIR, in_lab_namespace, make_searchable
from tenantflow.lab.daemons.process import Daemon, command_succeeds, free_port, port_open, start_daemon, stop

HERE = Path(__file__).parent
SLURM_TEMPLATE = HERE / "slurm.template.conf"
SLURMDBD_TEMPLATE = HERE / "slurmdbd.template.conf"
CLUSTER = "production"
DEFAULT_NODES = tuple(f"gpu-{i:02d}" for i in range(1, 17))
LAB_BIN = Path(__file__).resolve().parent.parent / "bin"
"""The stand-ins of the node's commands (``nvidia-smi``, ``all_reduce_perf``, ``df``) that jobs find on their PATH."""
NODE_CPUS = 32
NODE_MEMORY_MB = 64000
SPARE_NODE_SLOTS = 64
SRUN_PORT_RANGE = (60001, 63000)
"""slurm.conf's ``SrunPortRange``: the ports srun listens on for slurmd's connections back (slurm.conf(5) suggests a
range of this size for a busy login node), so a NetworkPolicy can name them."""
QUICKACK_ROUTES = ("local 127.0.0.0/8", "local 127.0.0.1")
QUICKACK_ROUTE_OPTIONS = (
    *("dev", "lo", "table", "local", "proto", "kernel"),
    *("scope", "host", "src", "127.0.0.1", "quickack", "1"),
)


class SlurmCommandError(RuntimeError):
    """A Slurm client command exited non-zero."""


@dataclass(frozen=True)
class SlurmPorts:
    mysql: int
    slurmdbd: int
    slurmctld: int
    slurmd: dict[str, int]


@dataclass
class SlurmHandle:
    """A running Slurm stack and how to talk to it."""

    slurm_dir: Path
    slurm_conf: Path
    partitions_conf: Path
    gres_conf: Path
    munge_socket: Path
    cluster: str
    ports: SlurmPorts
    nodes: list[str]
    slurmd_nodes: list[str]
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The process environment plus ``SLURM_CONF`` pointing at this stack."""
        return {**os.environ, "SLURM_CONF": str(self.slurm_conf)}

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client (``sacctmgr``, ``scontrol``, ...) against this stack."""
        result = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            output = result.stderr.strip() or result.stdout.strip()
            raise SlurmCommandError(f"{' '.join(argv)} exited {result.returncode}: {output}")
        return result

    def write_partitions(self, text: str) -> None:
        """Replace ``partitions.conf`` (then call :meth:`reconfigure`)."""
        self.partitions_conf.write_text(text)

    def reconfigure(self) -> None:
        self.run("scontrol", "reconfigure")

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            stop(daemon)


def apply_loopback_quickack() -> bool:
    """Turn on TCP quickack for loopback routes (Slurm RPCs otherwise stall ~40 ms each); needs root."""
    ip = shutil.which("ip")
    if ip is None:
        warnings.warn("no `ip` command: Slurm RPCs on loopback will be slow", stacklevel=2)
        return False
    for route in QUICKACK_ROUTES:
        result = subprocess.run(
            [ip, "route", "replace", *route.split(), *QUICKACK_ROUTE_OPTIONS],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            warnings.warn(
                f"loopback quickack route not set ({result.stderr.strip()}): Slurm RPCs will be slow",
                stacklevel=2,
            )
            return False
    return True


def _render(template: Path, target: Path, **values: object) -> Path:
    target.write_text(Template(template.read_text()).substitute(values))
    target.chmod(0o600)
    return target


def _secret(path: Path, nbytes: int = 24) -> str:
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(nbytes))
    return path.read_text().strip()


def _node_lines(slurmd_ports: dict[str, int], gpus_per_node: int) -> str:
    return "\n".join(
        f"NodeName={name} NodeAddr=127.0.0.1 NodeHostname={name} Port={port} CPUs={NODE_CPUS} "
        f"RealMemory={NODE_MEMORY_MB} Gres=gpu:{gpus_per_node} State=CLOUD"
        for name, port in slurmd_ports.items()
    )


def _gres_conf(slurm_dir: Path, nodes: Sequence[str], gpus_per_node: int) -> Path:
    """``gres.conf`` with one fake GPU per device file ``dev/<node>/nvidia<i>`` (char device 1:3)."""
    null = os.stat("/dev/null")
    lines = []
    for name in nodes:
        dev_dir = slurm_dir / "dev" / name
        dev_dir.mkdir(parents=True, exist_ok=True)
        for i in range(gpus_per_node):
            device = dev_dir / f"nvidia{i}"
            if not device.exists():
                os.mknod(device, stat.S_IFCHR | 0o666, null.st_rdev)
        lines.append(f"NodeName={name} Name=gpu File={dev_dir}/nvidia[0-{gpus_per_node - 1}]")
    path = slurm_dir / "gres.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def _start_munge(state_dir: Path, slurm_dir: Path) -> tuple[Daemon, Path]:
    munge_dir = slurm_dir / "munge"
    munge_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    key = munge_dir / "munge.key"
    if not key.exists():
        key.touch(mode=0o400)
        key.write_bytes(secrets.token_bytes(1024))
    sock = munge_dir / "munge.socket"
    daemon = start_daemon(
        state_dir,
        "munged",
        [
            "munged",
            *("--foreground", "--force", "--num-threads=2", f"--key-file={key}", f"--socket={sock}"),
            f"--pid-file={munge_dir / 'munged.pid'}",
            f"--seed-file={munge_dir / 'munged.seed'}",
            f"--log-file={munge_dir / 'munged.log'}",
        ],
        command_succeeds(["munge", "-n", "-S", str(sock)]),
        timeout=15,
    )
    return daemon, sock


def _mysql_args(mysql_dir: Path, port: int) -> list[str]:
    return [
        "--no-defaults",
        f"--datadir={mysql_dir / 'data'}",
        f"--socket={mysql_dir / 'mysqld.sock'}",
        f"--pid-file={mysql_dir / 'mysqld.pid'}",
        f"--tmpdir={mysql_dir / 'tmp'}",
        f"--port={port}",
        "--bind-address=127.0.0.1",
        "--user=root",
        "--skip-name-resolve",
        "--skip-log-bin",
        "--performance-schema=OFF",
        "--innodb-buffer-pool-size=32M",
        "--innodb-log-file-size=16M",
        "--innodb-lock-wait-timeout=900",
    ]


def _start_mysql(state_dir: Path, slurm_dir: Path, port: int, password: str) -> Daemon:
    mysql_dir = slurm_dir / "mysql"
    (mysql_dir / "tmp").mkdir(parents=True, exist_ok=True)
    args = _mysql_args(mysql_dir, port)
    if not (mysql_dir / "data" / "mysql").is_dir():
        install = subprocess.run(
            ["mariadb-install-db", *args, "--auth-root-authentication-method=socket", "--skip-test-db"],
            capture_output=True,
            text=True,
            check=False,
        )
        if install.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed:\n{install.stdout}\n{install.stderr}")
    client = ["mariadb", "--no-defaults", f"--socket={mysql_dir / 'mysqld.sock'}", "-uroot"]
    # ready when the socket the setup below uses answers, not when the TCP port is open: on a restart the port of
    # a mariadbd still shutting down, or one open before the socket, let the setup run too early
    ready = command_succeeds([*client, "-e", "SELECT 1"])
    daemon = start_daemon(state_dir, "mariadbd", ["mariadbd", *args], ready, timeout=30)
    sql = (
        "CREATE DATABASE IF NOT EXISTS slurm_acct_db;"
        f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}';"
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
    )
    made = subprocess.run([*client, "-e", sql], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        raise RuntimeError(f"setting up slurm_acct_db failed (exit {made.returncode}): {made.stderr.strip()}")
    return daemon


def _ensure_cluster(handle: SlurmHandle) -> None:
    listed = handle.run("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster").stdout.split()
    if handle.cluster not in listed:
        handle.run("sacctmgr", "-i", "add", "cluster", handle.cluster)


def start_slurm(
    state_dir: Path,
    nodes: Sequence[str] = DEFAULT_NODES,
    gpus_per_node: int = 8,
    *,
    slurmd_nodes: Sequence[str] = (),
    mysql_port: int | None = None,
    slurmdbd_port: int | None = None,
    slurmctld_port: int | None = None,
) -> SlurmHandle:
    """Start munged, MariaDB, slurmdbd and slurmctld (and slurmd for ``slurmd_nodes``) under
    ``state_dir/slurm``; ports default to free ones. Must run as root (``SlurmUser=root``)."""
    unknown = sorted(set(slurmd_nodes) - set(nodes))
    if unknown:
        raise ValueError(f"slurmd_nodes not among nodes: {unknown}")
    apply_loopback_quickack()
    slurm_dir = state_dir / "slurm"
    make_searchable(LAB_BIN)
    for sub in ("state", "spool", "log"):
        (slurm_dir / sub).mkdir(parents=True, exist_ok=True)
    ports = SlurmPorts(
        mysql=mysql_port or free_port(),
        slurmdbd=slurmdbd_port or free_port(),
        slurmctld=slurmctld_port or free_port(),
        slurmd={name: free_port() for name in nodes},
    )
    partitions_conf = slurm_dir / "partitions.conf"
    if not partitions_conf.exists():
        partitions_conf.write_text("# tenant partitions (rendered by the lab's Slurm-operator stand-in)\n")
    munge_daemon, munge_socket = _start_munge(state_dir, slurm_dir)
    handle = SlurmHandle(
        slurm_dir=slurm_dir,
        slurm_conf=slurm_dir / "slurm.conf",
        partitions_conf=partitions_conf,
        gres_conf=_gres_conf(slurm_dir, nodes, gpus_per_node),
        munge_socket=munge_socket,
        cluster=CLUSTER,
        ports=ports,
        nodes=list(nodes),
        slurmd_nodes=list(slurmd_nodes),
        daemons=[munge_daemon],
    )
    try:
        _start_rest(state_dir, handle, gpus_per_node)
    except BaseException:
        handle.stop()
        raise
    return handle


def _start_rest(state_dir: Path, handle: SlurmHandle, gpus_per_node: int) -> None:
    slurm_dir, ports = handle.slurm_dir, handle.ports
    mysql_password = _secret(slurm_dir / "mysql.password")
    handle.daemons.append(_start_mysql(state_dir, slurm_dir, ports.mysql, mysql_password))
    common = {"slurm_dir": slurm_dir, "munge_socket": handle.munge_socket, "slurmdbd_port": ports.slurmdbd}
    # slurmdbd has no -f: it reads slurmdbd.conf beside $SLURM_CONF
    _render(
        SLURMDBD_TEMPLATE,
        slurm_dir / "slurmdbd.conf",
        mysql_port=ports.mysql,
        mysql_password=mysql_password,
        **common,
    )
    _render(
        SLURM_TEMPLATE,
        handle.slurm_conf,
        cluster=handle.cluster,
        hostname=socket.gethostname().split(".")[0],
        slurmctld_port=ports.slurmctld,
        srun_port_range=f"{SRUN_PORT_RANGE[0]}-{SRUN_PORT_RANGE[1]}",
        max_node_count=len(handle.nodes) + SPARE_NODE_SLOTS,
        node_lines=_node_lines(ports.slurmd, gpus_per_node),
        partitions_conf=handle.partitions_conf,
        namespace_slurm_dir=NAMESPACE_SLURM_DIR,
        **common,
    ).chmod(0o644)
    env = handle.env
    handle.daemons.append(
        start_daemon(
            state_dir,
            "slurmdbd",
            ["slurmdbd", "-D"],
            port_open(ports.slurmdbd),
            env=env,
            timeout=60,
        )
    )
    _ensure_cluster(handle)
    handle.daemons.append(
        start_daemon(
            state_dir,
            "slurmctld",
            in_lab_namespace(state_dir, ["slurmctld", "-D", "-i", "-f", str(handle.slurm_conf)]),
            command_succeeds(["scontrol", "ping"], env),
            env=env,
            timeout=60,
        )
    )
    for name in handle.slurmd_nodes:
        handle.daemons.append(_start_slurmd(state_dir, handle, name))


def _start_slurmd(state_dir: Path, handle: SlurmHandle, name: str) -> Daemon:
    (handle.slurm_dir / "spool" / name).mkdir(parents=True, exist_ok=True)
    tmp = handle.slurm_dir / "tmp" / name
    tmp.mkdir(parents=True, exist_ok=True)
    tmp.chmod(0o1777)
    listening = port_open(handle.ports.slurmd[name])

    def registered() -> bool:
        state = handle.run("sinfo", "-h", "-n", name, "-o", "%t", check=False).stdout.strip()
        return listening() and state in {"idle", "alloc", "mix"}

    return start_daemon(
        state_dir,
        f"slurmd-{name}",
        in_lab_namespace(state_dir, ["slurmd", "-D", "-N", name, "-f", str(handle.slurm_conf)]),
        registered,
        env=handle.env,
        timeout=60,
    )
