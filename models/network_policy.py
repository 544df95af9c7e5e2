"""Typed NetworkPolicy specs (networking.k8s.io/v1) as a contract may carry them, and the paths a tenant needs.

Only the fields whose meaning Kubernetes documents for NetworkPolicy are modelled
(https://kubernetes.io/docs/concepts/services-networking/network-policies/ and the API reference of
``NetworkPolicySpec``): ``podSelector``, ``policyTypes``, ``ingress[].from``/``egress[].to`` peers
(``podSelector``, ``namespaceSelector``, ``ipBlock``) and ``ports`` (``port``, ``endPort``, ``protocol``).
:data:`REQUIRED_PATHS` lists the traffic the runbook's tenant cannot live without, on the ports clients dial (a
Service's port): ``activities/kube/ports.py`` turns them into the pod ports a policy must allow, and adds
interactive jobs' paths to slurmd (:data:`SLURMD`) once slurm.conf's ports are read.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tenantflow.models.base import Strict

LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _label_key(key: str) -> str:
    prefix, slash, name = key.rpartition("/")
    if not LABEL_NAME.match(name) or (slash and not DNS_SUBDOMAIN.match(prefix)):
        raise ValueError(
            f"{key!r} is not a Kubernetes label key: [prefix/]name, the name at most 63 letters, "
            "digits, '-', '_' or '.' starting and ending alphanumeric, the prefix a DNS subdomain"
        )
    return key


def _label_value(value: str) -> str:
    if value and not LABEL_NAME.match(value):
        raise ValueError(
            f"{value!r} is not a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending alphanumeric"
        )
    return value


def _cidr(value: str) -> str:
    try:
        ipaddress.ip_network(value)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a CIDR such as 203.0.113.0/24 ({exc})") from None
    return value


LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
Cidr = Annotated[str, AfterValidator(_cidr)]
PortNumber = Annotated[int, Field(ge=1, le=65535)]
PortName = Annotated[str, Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$", description="an IANA service name")]


class Protocol(StrEnum):
    tcp = "TCP"
    udp = "UDP"
    sctp = "SCTP"


class Requirement(Strict):
    key: LabelKey
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[LabelValue] = Field(default_factory=list)


class LabelSelector(Strict):
    """A Kubernetes label selector; the empty selector selects everything."""

    match_labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: list[Requirement] = Field(default_factory=list, alias="matchExpressions")

    def matches(self, labels: dict[str, str]) -> bool:
        if any(labels.get(key) != value for key, value in self.match_labels.items()):
            return False
        for req in self.match_expressions:
            present = req.key in labels
            if req.operator == "In" and not (present and labels[req.key] in req.values):
                return False
            if req.operator == "NotIn" and present and labels[req.key] in req.values:
                return False
            if req.operator == "Exists" and not present:
                return False
            if req.operator == "DoesNotExist" and present:
                return False
        return True


class IpBlock(Strict):
    cidr: Cidr
    except_: list[Cidr] = Field(default_factory=list, alias="except")


class Peer(Strict):
    pod_selector: LabelSelector | None = Field(None, alias="podSelector")
    namespace_selector: LabelSelector | None = Field(None, alias="namespaceSelector")
    ip_block: IpBlock | None = Field(None, alias="ipBlock")


class PolicyPort(Strict):
    protocol: Protocol = Protocol.tcp
    port: PortNumber | PortName | None = None
    end_port: int | None = Field(None, ge=1, le=65535, alias="endPort")


class IngressRule(Strict):
    from_: list[Peer] = Field(default_factory=list, alias="from")
    ports: list[PolicyPort] = Field(default_factory=list)


class EgressRule(Strict):
    to: list[Peer] = Field(default_factory=list)
    ports: list[PolicyPort] = Field(default_factory=list)


class PolicySpec(Strict):
    pod_selector: LabelSelector = Field(alias="podSelector")
    policy_types: list[Literal["Ingress", "Egress"]] | None = Field(None, alias="policyTypes")
    ingress: list[IngressRule] | None = None
    egress: list[EgressRule] | None = None

    def types(self) -> set[str]:
        """``policyTypes``, defaulted as Kubernetes does: Ingress always, Egress when egress rules exist."""
        if self.policy_types is not None:
            return set(self.policy_types)
        return {"Ingress", "Egress"} if self.egress is not None else {"Ingress"}


class PolicyMeta(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str = Field(..., pattern=r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
    namespace: str | None = None


class NetworkPolicy(BaseModel):
    """One ``networking.k8s.io/v1`` NetworkPolicy (status and other metadata ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)
    api_version: Literal["networking.k8s.io/v1"] = Field("networking.k8s.io/v1", alias="apiVersion")
    kind: Literal["NetworkPolicy"] = "NetworkPolicy"
    metadata: PolicyMeta
    spec: PolicySpec

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass(frozen=True)
class NetworkPorts:
    """The pod ports the tenant's allow policy opens, as read from the cluster (``activities/kube/ports.py``), and
    where each came from (``notes``, for the plan)."""

    ldaps: int
    slurmctld: int
    dns_udp: int
    dns_tcp: int
    slurmd: int
    srun_range: tuple[int, int] | None = None
    notes: tuple[str, ...] = ()
    slurm_config_read: bool = False
    """Whether SlurmdPort and SrunPortRange come from slurmctld's configuration (else: slurm.conf(5)'s defaults)."""


Direction = Literal["egress", "ingress"]


class RequiredPath(Strict):
    """Traffic the tenant's login pod needs: to (egress) or from (ingress) a peer on a port."""

    direction: Direction
    peer: Annotated[str, Field(description="what is at the other end, for messages")]
    peer_namespace: str | None = Field(None, description="None: outside the cluster (any address)")
    service: str | None = Field(None, description="the Service in peer_namespace whose selector gives its labels")
    peer_labels: dict[str, str] = Field(default_factory=dict, description="used when the Service is not found")
    port: int
    end_port: int | None = Field(None, description="the last port of a range every port of which is needed")
    protocol: Protocol
    why: str

    @property
    def port_text(self) -> str:
        return f"{self.port}-{self.end_port}" if self.end_port else str(self.port)

    @property
    def label(self) -> str:
        arrow = "to" if self.direction == "egress" else "from"
        return f"login pod {arrow} {self.peer} {self.port_text}/{self.protocol.value}"


@dataclass(frozen=True)
class _Service:
    """An in-cluster peer the login pod reaches through a Service: the :class:`RequiredPath` fields that say who
    and where it is."""

    peer: str
    peer_namespace: str
    service: str | None
    peer_labels: dict[str, str]

    def egress(self, port: int, protocol: Protocol, why: str) -> RequiredPath:
        return RequiredPath(direction="egress", port=port, protocol=protocol, why=why, **asdict(self))

    def ingress(self, port: int, end_port: int, protocol: Protocol, why: str) -> RequiredPath:
        """Connections the peer opens to the login pod on every port of ``port..end_port``."""
        return RequiredPath(
            direction="ingress", port=port, end_port=end_port, protocol=protocol, why=why, **asdict(self)
        )


SLURMCTLD = _Service("slurmctld", "slurm-control", "slurmctld", {"app": "slurmctld"})
LDAP_OUTPOST = _Service("the LDAP outpost", "auth", "authentik-ldap-outpost", {"app": "authentik-ldap-outpost"})
DNS = _Service("DNS", "kube-system", "kube-dns", {"k8s-app": "kube-dns"})
SLURMD = _Service("slurmd", "slurm-control", None, {"app.kubernetes.io/component": "slurmd"})
"""The slurmd (SUNK NodeSet) pods: srun reaches them pod to pod, through no Service."""

REQUIRED_PATHS: tuple[RequiredPath, ...] = (
    SLURMCTLD.egress(6817, Protocol.tcp, "srun/sbatch/squeue talk to slurmctld on SlurmctldPort 6817"),
    LDAP_OUTPOST.egress(636, Protocol.tcp, "sssd resolves users and groups over LDAPS (runbook 2c)"),
    DNS.egress(53, Protocol.udp, "name resolution"),
    DNS.egress(53, Protocol.tcp, "DNS falls back to TCP for answers over 512 bytes (RFC 7766)"),
    RequiredPath(
        direction="ingress",
        peer="SSH clients",
        peer_namespace=None,
        port=22,
        protocol=Protocol.tcp,
        why="users log in over SSH through the login Service (LoadBalancer)",
    ),
)
