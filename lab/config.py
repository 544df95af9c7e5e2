"""The lab's start-up configuration (``DIR/lab.json``), written by ``lab up`` and read by ``lab serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from tenantflow.lab.authentik.versions import AUTHENTIK_CURRENT
from tenantflow.lab.endpoints import KUBE_CONTEXTS

SLURM_OPERATORS = ("configmap", "slinky")
"""The Slurm operators the lab can play (:mod:`lab.controllers.slurm`): a ConfigMap rendered into a file slurm.conf
includes, or Slinky's Controller (:mod:`lab.controllers.slinky`)."""


class LabConfig(BaseModel):
    state_dir: Path
    kube_ports: dict[str, int]
    authentik_port: int
    authentik_token: str
    weka_port: int
    notify_port: int | None = None
    """The webhook sink's (:mod:`lab.notify_sink`); labs made before it had none and get one at their next start."""
    weka_username: str = "admin"
    weka_password: str
    ldap_url: str
    ldap_admin_dn: str
    ldap_admin_password: str
    ldap_bind_dn: str
    ldap_bind_password: str
    slurm_conf: Path
    partitions_file: Path
    slurm_operator: Literal["configmap", "slinky"] = "configmap"
    """The Slurm operator the lab plays (:data:`SLURM_OPERATORS`, ``lab up --slurm-operator``)."""
    kube_tokens: dict[str, str]
    authentik_version: str = AUTHENTIK_CURRENT
    """The Authentik release the stand-in plays (``lab up --authentik 2024.10|2025.2|2025.10|2025.12|current``)."""

    @property
    def path(self) -> Path:
        return self.state_dir / "lab.json"

    def write(self) -> None:
        self.path.write_text(self.model_dump_json(indent=2))
        self.path.chmod(0o600)

    @classmethod
    def read(cls, state_dir: Path) -> LabConfig:
        return cls.model_validate_json((state_dir / "lab.json").read_text())

    def contexts(self) -> tuple[str, ...]:
        return tuple(c for c in KUBE_CONTEXTS if c in self.kube_ports)
