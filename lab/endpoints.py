"""Where the lab's stand-ins listen, and how that is written to ``DIR/lab.env``.

``lab up`` writes one ``lab.env`` and one kubeconfig. ``lab.env`` is a dotenv file (``KEY=VALUE``
lines), the format of the worker's ``TENANTFLOW_ENV_FILE`` (see ``worker/config.py``): a worker
started with ``TENANTFLOW_ENV_FILE=DIR/lab.env`` drives the lab. The CLI, the bench and the tests
read it back with :func:`LabEndpoints.load`.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values
from pydantic import BaseModel

from tenantflow.lab.daemons.weka_mounts import mount_root

KUBE_CONTEXTS = ("hub", "worker", "tenant-cluster")
LDAP_BASE_DN = "dc=auth,dc=example,dc=internal"
LDAP_BIND_DN = f"cn=ldap-bind,ou=users,{LDAP_BASE_DN}"
SLINKY_CONTROLLER = "slurm"
"""The Slinky ``Controller`` a lab playing Slinky seeds (:mod:`lab.controllers.slinky`)."""
LAB_SMOKE_WRITE_MB = 16
"""Smoke 7c writes 16 MiB in the lab (the runbook's 10 GiB in production)."""


def konduktor_bin(state_dir: Path) -> Path:
    """Where ``lab serve`` puts the ``konduktor`` stand-in (:mod:`lab.konduktor`) for the worker."""
    return state_dir / "bin" / "konduktor"


class LabEndpoints(BaseModel):
    """Every address and credential of a running lab."""

    state_dir: Path
    kubeconfig: Path
    kube_urls: dict[str, str]
    authentik_url: str
    authentik_token: str
    weka_url: str
    weka_username: str
    weka_password: str
    weka_org: str = "Root"
    ldap_url: str
    ldap_base_dn: str = LDAP_BASE_DN
    ldap_bind_dn: str = LDAP_BIND_DN
    ldap_bind_password: str
    slurm_conf: Path
    notify_url: str = ""
    """The webhook sink (:mod:`lab.notify_sink`): the worker posts term notices to ``<notify_url>/hooks/tenantflow``."""
    slurm_operator: str = "configmap"
    """The Slurm operator the lab plays (``lab up --slurm-operator``): the worker's partition backend follows it."""

    def to_env(self) -> dict[str, str]:
        env = {
            "TENANTFLOW_LAB_DIR": str(self.state_dir),
            "TENANTFLOW_KUBECONFIG": str(self.kubeconfig),
            "AUTHENTIK_URL": self.authentik_url,
            "AUTHENTIK_TOKEN": self.authentik_token,
            "WEKA_URL": self.weka_url,
            "WEKA_USERNAME": self.weka_username,
            "WEKA_PASSWORD": self.weka_password,
            "WEKA_ORG": self.weka_org,
            "LDAP_URL": self.ldap_url,
            "LDAP_BASE_DN": self.ldap_base_dn,
            "LDAP_BIND_DN": self.ldap_bind_dn,
            "LDAP_BIND_PASSWORD": self.ldap_bind_password,
            "SLURM_CONF": str(self.slurm_conf),
            "TENANTFLOW_SMOKE_SCRATCH_ROOT": str(mount_root(self.state_dir) / "scratch"),
            "TENANTFLOW_SMOKE_WRITE_MB": str(LAB_SMOKE_WRITE_MB),
            "KONDUKTOR_BIN": str(konduktor_bin(self.state_dir)),
        }
        if self.notify_url:
            env["TENANTFLOW_NOTIFY_WEBHOOK_URL"] = f"{self.notify_url}/hooks/tenantflow"
        if self.slurm_operator == "slinky":
            env |= {"SLURM_PARTITION_BACKEND": "slinky", "SLURM_SLINKY_CONTROLLER": SLINKY_CONTROLLER}
        for context, url in self.kube_urls.items():
            env[f"KUBE_URL_{context.upper().replace('-', '_')}"] = url
        return env

    def ldapsearch(self, search_filter: str, *attributes: str, password: str | None = None) -> list[str]:
        """The runbook's ``ldapsearch`` check through the LDAP outpost, bound as the lab's bind account, for
        ``search_filter`` and ``attributes``; ``password`` stands on the command line in place of the bind password
        (the demo prints ``$LDAP_BIND_PASSWORD`` for the operator's shell)."""
        bind = ["-D", self.ldap_bind_dn, "-w", password or self.ldap_bind_password]
        return [
            "ldapsearch",
            "-x",
            "-LLL",
            "-H",
            self.ldap_url,
            *bind,
            "-b",
            self.ldap_base_dn,
            search_filter,
            *attributes,
        ]

    def write(self) -> Path:
        """Write ``lab.env`` whole or not at all: the supervisor takes the file's existence as "the lab is up" and
        reads it at once, so it is written beside (owner-only, it holds passwords) and renamed into place."""
        path = self.state_dir / "lab.env"
        lines = [f"{key}={value}" for key, value in sorted(self.to_env().items())]
        partial = path.with_name(".lab.env.partial")
        partial.unlink(missing_ok=True)
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as stream:
            stream.write("\n".join(lines) + "\n")
        partial.replace(path)
        return path

    @classmethod
    def load(cls, state_dir: Path) -> LabEndpoints:
        with (state_dir / "lab.env").open() as stream:
            env = {key: value or "" for key, value in dotenv_values(stream=stream).items()}
        kube_urls = {
            context: env[f"KUBE_URL_{context.upper().replace('-', '_')}"]
            for context in KUBE_CONTEXTS
            if f"KUBE_URL_{context.upper().replace('-', '_')}" in env
        }
        return cls(
            state_dir=Path(env["TENANTFLOW_LAB_DIR"]),
            kubeconfig=Path(env["TENANTFLOW_KUBECONFIG"]),
            kube_urls=kube_urls,
            authentik_url=env["AUTHENTIK_URL"],
            authentik_token=env["AUTHENTIK_TOKEN"],
            weka_url=env["WEKA_URL"],
            weka_username=env["WEKA_USERNAME"],
            weka_password=env["WEKA_PASSWORD"],
            weka_org=env.get("WEKA_ORG", "Root"),
            ldap_url=env["LDAP_URL"],
            ldap_base_dn=env.get("LDAP_BASE_DN", LDAP_BASE_DN),
            ldap_bind_dn=env.get("LDAP_BIND_DN", LDAP_BIND_DN),
            ldap_bind_password=env["LDAP_BIND_PASSWORD"],
            slurm_conf=Path(env["SLURM_CONF"]),
            notify_url=env.get("TENANTFLOW_NOTIFY_WEBHOOK_URL", "").removesuffix("/hooks/tenantflow"),
            slurm_operator="slinky" if env.get("SLURM_PARTITION_BACKEND") == "slinky" else "configmap",
        )
