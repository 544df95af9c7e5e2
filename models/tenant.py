"""The tenant contract: everything the onboarding runbook needs to know about one tenant.

Field defaults reproduce the runbook's example values (``tenant-foo``); names of
derived objects (accounts, QoS, namespaces, filesystems) are computed here once
so every layer uses the same ones.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum
from typing import Annotated, Self

from cryptography.hazmat.primitives.serialization import load_ssh_public_key
from pydantic import AfterValidator, Field, field_validator, model_validator

from tenantflow.models.base import Strict
from tenantflow.models.network_policy import NetworkPolicy
from tenantflow.models.sku import lookup_sku
from tenantflow.models.targets import KubeTarget
from tenantflow.models.units import Size, parse_size

SLUG_PATTERN = r"^tenant-[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$"
USERNAME_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
EMAIL_PATTERN = r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,180}\.[A-Za-z]{2,24}$"
DURATION_PATTERN = r"^(UNLIMITED|(\d+-)?\d{1,2}:\d{2}:\d{2})$"
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
)


def _check_ssh_key(key: str) -> str:
    if "\n" in key or "\r" in key:
        raise ValueError("an SSH key must be one line; put several keys in separate list items")
    parts = key.split()
    if len(parts) < 2 or parts[0] not in SSH_KEY_TYPES:
        raise ValueError(
            f"not an OpenSSH public key; expected '<type> <base64> [comment]' with type one of "
            f"{', '.join(SSH_KEY_TYPES)}"
        )
    if len(parts) > 2 and not re.fullmatch(r"[A-Za-z0-9@._+-]{1,100}", " ".join(parts[2:]).replace(" ", "_")):
        raise ValueError("the SSH key comment may only hold letters, digits and @._+-")
    try:
        load_ssh_public_key(" ".join(parts[:2]).encode())
    except (ValueError, TypeError) as exc:
        raise ValueError(f"malformed SSH public key ({exc}); paste the line from ~/.ssh/id_*.pub") from None
    return key


DISPLAY_NAME_FORBIDDEN = ",'\"=<>{}$`\\;|&"
"""Characters sacctmgr cannot take in ``Description=`` (it splits values at commas and strips ' and " as
quotes, so ``Acme, Inc.`` fails ``slurm.accounts`` after approval) or a shell or LDAP would treat specially."""


UNPRINTABLE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
"""Unicode categories a name must not contain: controls (U+0085 NEXT LINE among them), format characters
(zero-width and bidirectional marks), surrogates, private use, unassigned, and the line and paragraph separators
U+2028/U+2029. A line or paragraph separator splits a row of ``sacctmgr -P`` output for any reader that splits
on Unicode line boundaries, and none of them has a place in a person's or a company's name."""


def _check_printable(field: str, value: str) -> str:
    """``value`` when every character is printable text (letters, marks, digits, punctuation, symbols, spaces);
    a ``ValueError`` naming ``field``, each character by its code point and name, and the fix otherwise."""
    bad = sorted({c for c in value if unicodedata.category(c) in UNPRINTABLE_CATEGORIES})
    if bad:
        shown = ", ".join(f"U+{ord(c):04X} ({unicodedata.name(c, 'unnamed')})" for c in bad)
        raise ValueError(
            f"{field} contains {shown}, which is not printable text (a control, format or line-separator "
            f"character); write the name without it"
        )
    return value


def _check_user_name(value: str) -> str:
    return _check_printable("name", value)


def _check_display_name(value: str) -> str:
    _check_printable("display_name", value)
    bad = sorted({c for c in value if c in DISPLAY_NAME_FORBIDDEN or ord(c) < 0x20 or ord(c) == 0x7F})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        cleaned = " ".join("".join(" " if c in bad else c for c in value).split())
        raise ValueError(
            f"display_name {value!r} contains {shown}, which sacctmgr cannot store in an account's "
            f"Description (it splits values at commas and strips quotes); write it without them, "
            f"e.g. {cleaned!r}"
        )
    return value


SshKey = Annotated[str, Field(max_length=16_384), AfterValidator(_check_ssh_key)]


NodeName = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$",
        description="a Kubernetes node name that is also a Slurm NodeName and a label "
        "value: lowercase letters, digits, '-' and '.', at most 63",
    ),
]


def _check_hostname(value: str | None) -> str | None:
    if value is not None and any(
        not label or len(label) > 63 or label.startswith("-") or label.endswith("-") for label in value.split(".")
    ):
        raise ValueError(
            f"login.hostname {value!r} is not a DNS name: each dot-separated label must be 1 to 63 "
            "letters, digits or '-', not starting or ending with '-'"
        )
    return value


class PartitionType(StrEnum):
    reserved = "reserved"
    on_demand = "on-demand"
    spot = "spot"


class StorageIsolation(StrEnum):
    strict_org = "strict-org"
    """A Weka organization of its own (runbook 6a)."""
    shared_org = "shared-org"
    """Per-tenant directories with quotas in the shared org (runbook 6b)."""


class NetworkIsolation(StrEnum):
    network_policy = "network-policy"
    pkey = "pkey"


class OverSubscribe(StrEnum):
    exclusive = "EXCLUSIVE"
    no = "NO"


class TenantUser(Strict):
    username: str = Field(
        ..., pattern=USERNAME_PATTERN, description="lowercase, starts with a letter, letters digits and hyphens, max 32"
    )
    email: str = Field(..., max_length=254, pattern=EMAIL_PATTERN)
    name: Annotated[
        str,
        Field(
            min_length=1,
            max_length=150,
            pattern=r"^[^\x00-\x1f<>{}$`\\;|&]+$",
            description="full name; no control or shell characters",
        ),
        AfterValidator(_check_user_name),
    ]
    ssh_keys: list[SshKey] = Field(..., min_length=1, max_length=16)
    adopt_existing: bool = Field(
        False,
        exclude_if=lambda adopt: not adopt,
        description="take over an Authentik account that already has this username "
        "(active or not, outside this tenant); shown in the plan. Left out of the "
        "serialized contract when false, so recorded histories keep their arguments",
    )


class Capacity(Strict):
    sku: str = Field("h100-8x", description="node.kubernetes.io/instance-type of the GPU nodes")
    gpus: int = Field(64, ge=1, le=100_000)
    partition_type: PartitionType = PartitionType.reserved
    term_days: int = Field(365, ge=1, le=3650)
    hardware_pool: str = Field("gpu-h100-rack-a", pattern=r"^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$")
    nodes: list[NodeName] | None = Field(None, description="explicit node names; chosen in preflight when absent")
    evict_on_release: bool = Field(False, description="keep false: true kills running jobs on RMA (a plan warning)")

    @field_validator("sku")
    @classmethod
    def _known_sku(cls, value: str) -> str:
        lookup_sku(value)
        return value

    @model_validator(mode="after")
    def _gpus_fill_nodes(self) -> Self:
        per_node = lookup_sku(self.sku).gpus_per_node
        if self.gpus % per_node:
            raise ValueError(
                f"gpus={self.gpus} is not a multiple of {per_node} GPUs per {self.sku} node; "
                f"ask for {self.gpus - self.gpus % per_node or per_node} or "
                f"{self.gpus + per_node - self.gpus % per_node}"
            )
        if self.nodes is not None and len(self.nodes) != self.node_count:
            raise ValueError(
                f"nodes lists {len(self.nodes)} names but gpus={self.gpus} needs {self.node_count} {self.sku} nodes"
            )
        return self

    @property
    def gpus_per_node(self) -> int:
        return lookup_sku(self.sku).gpus_per_node

    @property
    def node_count(self) -> int:
        return self.gpus // self.gpus_per_node


class QuotaPair(Strict):
    hard: Size
    soft: Size

    @model_validator(mode="after")
    def _soft_below_hard(self) -> Self:
        if parse_size(self.soft) > parse_size(self.hard):
            raise ValueError(f"soft quota {self.soft} is above hard quota {self.hard}; lower soft")
        return self


class Storage(Strict):
    isolation: StorageIsolation = StorageIsolation.strict_org
    home_per_user: QuotaPair = QuotaPair(hard="100GB", soft="90GB")
    scratch: QuotaPair = QuotaPair(hard="50TB", soft="45TB")
    home_filesystem_capacity: Size = "5TB"
    pvc_name: str = Field("training-scratch", pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
    pvc_size: Size = "10Ti"

    @property
    def requested_bytes(self) -> int:
        return parse_size(self.home_filesystem_capacity) + parse_size(self.scratch.hard)


class KubeQuota(Strict):
    requests_cpu: str = Field("1024", pattern=r"^\d+m?$")
    requests_memory: str = Field("8Ti", pattern=r"^\d+(Ki|Mi|Gi|Ti|Pi)?$")
    limits_memory: str = Field("10Ti", pattern=r"^\d+(Ki|Mi|Gi|Ti|Pi)?$")
    persistentvolumeclaims: int = Field(50, ge=0, le=10_000)
    requests_storage: str = Field("100Ti", pattern=r"^\d+(Ki|Mi|Gi|Ti|Pi)?$")
    default_cpu: str = Field("4", pattern=r"^\d+m?$")
    default_memory: str = Field("16Gi", pattern=r"^\d+(Ki|Mi|Gi|Ti)?$")
    default_request_cpu: str = Field("1", pattern=r"^\d+m?$")
    default_request_memory: str = Field("4Gi", pattern=r"^\d+(Ki|Mi|Gi|Ti)?$")


class Qos(Strict):
    priority: int = Field(..., ge=0, le=1_000_000)
    grp_gpus: int | None = Field(None, ge=1, description="GrpTRES=gres/gpu; defaults to the contract's GPUs")
    max_wall: str = Field(..., pattern=DURATION_PATTERN)
    preempt_off: bool = False
    deny_on_limit: bool = True


class Slurm(Strict):
    cluster: str = Field("production", pattern=r"^[a-z0-9_-]{1,40}$")
    fairshare: int = Field(300, ge=1, le=1_000_000)
    grp_jobs: int = Field(200, ge=1, le=1_000_000)
    team_account: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$",
        description="sub-account; default ml-team-<short>; empty string skips",
    )
    team_fairshare: int = Field(200, ge=1, le=1_000_000)
    budget_gpu_minutes_total: int = Field(720_000, ge=1, description="split evenly across users")
    user_max_jobs: int = Field(20, ge=1, le=100_000)
    normal_qos: Qos = Qos(priority=100, max_wall="24:00:00", deny_on_limit=True)
    interactive_qos: Qos = Qos(priority=200, grp_gpus=8, max_wall="04:00:00", preempt_off=True, deny_on_limit=False)
    partition_max_time: str = Field("24:00:00", pattern=DURATION_PATTERN)
    partition_default_time: str = Field("01:00:00", pattern=DURATION_PATTERN)
    oversubscribe: OverSubscribe = OverSubscribe.exclusive
    contract_wall_limit: str = Field(
        "24:00:00", pattern=DURATION_PATTERN, description="the wall limit the tenant bought; UNLIMITED for none"
    )


class Network(Strict):
    isolation: NetworkIsolation = NetworkIsolation.network_policy
    pkey: str | None = Field(None, pattern=r"^0x[0-9a-fA-F]{1,4}$")
    policies: list[NetworkPolicy] | None = Field(
        None,
        max_length=50,
        exclude_if=lambda policies: policies is None,
        description="the tenant's own NetworkPolicies instead of the generated allow and SSH policies (the deny-all "
        "is always written); refused at plan time if the login pod loses a path it needs. Left out of the "
        "serialized contract when absent, so recorded histories keep their arguments",
    )

    @model_validator(mode="after")
    def _pkey_given(self) -> Self:
        if self.isolation is NetworkIsolation.pkey and self.pkey is None:
            raise ValueError("isolation=pkey needs pkey, e.g. 0x8001")
        return self


class Login(Strict):
    hostname: Annotated[str | None, AfterValidator(_check_hostname)] = Field(
        None, pattern=r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$", description="default login.<slug>.example.internal"
    )
    replicas: int = Field(2, ge=1, le=10)
    chart_version: str = Field("1.4.x", pattern=r"^[0-9x.]+$")


class TenantContract(Strict):
    """One tenant as signed: capacity, people, storage, isolation, Slurm budget."""

    slug: str = Field(
        ..., pattern=SLUG_PATTERN, description="tenant-<name>: lowercase letters, digits and hyphens, max 32 characters"
    )
    display_name: Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_check_display_name)]
    cluster: KubeTarget
    capacity: Capacity = Capacity()
    users: list[TenantUser] = Field(..., min_length=1, max_length=500)
    admins_group: bool = Field(False, description="bind <slug>-admins to ClusterRole edit in the namespace")
    storage: Storage = Storage()
    kube_quota: KubeQuota = KubeQuota()
    slurm: Slurm = Slurm()
    network: Network = Network()
    login: Login = Login()

    @field_validator("users")
    @classmethod
    def _unique_users(cls, users: list[TenantUser]) -> list[TenantUser]:
        seen: set[str] = set()
        for index, user in enumerate(users):
            if user.username in seen:
                raise ValueError(f"users[{index}].username {user.username!r} appears twice; usernames must be unique")
            seen.add(user.username)
        return users

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if len(self.slug) > 32:
            raise ValueError("slug is longer than 32 characters; shorten it")
        if self.slurm.budget_gpu_minutes_total < len(self.users):
            raise ValueError("slurm.budget_gpu_minutes_total is smaller than the number of users")
        for qos_name, qos in (("normal_qos", self.slurm.normal_qos), ("interactive_qos", self.slurm.interactive_qos)):
            if qos.grp_gpus is not None and qos.grp_gpus > self.capacity.gpus:
                raise ValueError(f"slurm.{qos_name}.grp_gpus={qos.grp_gpus} exceeds capacity.gpus={self.capacity.gpus}")
        return self

    @property
    def short(self) -> str:
        return self.slug.removeprefix("tenant-")

    @property
    def namespace(self) -> str:
        return self.slug

    @property
    def team_account(self) -> str | None:
        if self.slurm.team_account == "":
            return None
        return self.slurm.team_account or f"ml-team-{self.short}"

    @property
    def user_account(self) -> str:
        return self.team_account or self.slug

    @property
    def normal_qos_name(self) -> str:
        return f"normal-{self.short}"

    @property
    def interactive_qos_name(self) -> str:
        return f"interactive-{self.short}"

    @property
    def reservation_name(self) -> str:
        return f"{self.slug}-reservation"

    @property
    def login_hostname(self) -> str:
        return self.login.hostname or f"login.{self.slug}.example.internal"

    @property
    def user_budget_gpu_minutes(self) -> int:
        return self.slurm.budget_gpu_minutes_total // len(self.users)

    @property
    def usernames(self) -> list[str]:
        return [user.username for user in self.users]
