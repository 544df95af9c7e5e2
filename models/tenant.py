"""The tenant contract: everything the onboarding runbook needs to know about one tenant.

Field defaults reproduce the runbook's example values (``tenant-foo``); names of
derived objects (accounts, QoS, namespaces, filesystems) are computed here once
so every layer uses the same ones.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import Annotated, Self

from pydantic import AfterValidator, Field, field_validator, model_validator

from tenantflow.models.base import Strict
from tenantflow.models.contract_fields import (
    DURATION_PATTERN,
    EMAIL_PATTERN,
    MAX_SECRET_BYTES,
    SLUG_PATTERN,
    USERNAME_PATTERN,
    NodeName,
    SshKey,
    check_display_name,
    check_hostname,
    check_user_name,
)
from tenantflow.models.durations import duration_minutes, longer
from tenantflow.models.network_policy import NetworkPolicy
from tenantflow.models.sku import lookup_sku
from tenantflow.models.targets import KubeTarget
from tenantflow.models.units import Size, parse_quantity, parse_size


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
        AfterValidator(check_user_name),
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
        repeated = sorted(name for name, times in Counter(self.nodes or []).items() if times > 1)
        if repeated:
            raise ValueError(
                f"nodes lists {', '.join(repeated)} more than once; a node is reserved once, so name "
                f"{self.node_count} different nodes"
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
    persistentvolumeclaims: int = Field(
        50, ge=1, le=10_000, description="at least 1: onboarding makes the tenant PVC (storage.pvc_name)"
    )
    requests_storage: str = Field("100Ti", pattern=r"^\d+(Ki|Mi|Gi|Ti|Pi)?$")
    default_cpu: str = Field("4", pattern=r"^\d+m?$")
    default_memory: str = Field("16Gi", pattern=r"^\d+(Ki|Mi|Gi|Ti)?$")
    default_request_cpu: str = Field("1", pattern=r"^\d+m?$")
    default_request_memory: str = Field("4Gi", pattern=r"^\d+(Ki|Mi|Gi|Ti)?$")

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Self:
        """The apiserver refuses a LimitRange whose default request is above its default limit
        (``ValidateLimitRange`` in kubernetes pkg/apis/core/validation/validation.go: "default request value
        ... is greater than default limit value"), which would fail ``kube.quota`` after approval."""
        for resource in ("cpu", "memory"):
            request, limit = getattr(self, f"default_request_{resource}"), getattr(self, f"default_{resource}")
            if parse_quantity(request) > parse_quantity(limit):
                raise ValueError(
                    f"default_request_{resource}={request} is above default_{resource}={limit}; Kubernetes refuses "
                    f"a LimitRange whose default request is above its default limit: lower default_request_{resource}"
                    f" or raise default_{resource}"
                )
        return self


class Qos(Strict):
    priority: int = Field(..., ge=0, le=1_000_000)
    grp_gpus: int | None = Field(None, ge=1, description="GrpTRES=gres/gpu; defaults to the contract's GPUs")
    max_wall: str = Field(..., pattern=DURATION_PATTERN)
    preempt_off: bool = False
    deny_on_limit: bool = True


class Slurm(Strict):
    cluster: str = Field(
        "production",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$",
        description="the Slurm ClusterName; starts with a letter or digit (a leading '-' would read as an option)",
    )
    fairshare: int = Field(300, ge=1, le=1_000_000)
    grp_jobs: int = Field(200, ge=1, le=1_000_000)
    team_account: str | None = Field(
        None,
        pattern=r"^([a-z0-9][a-z0-9_-]{0,39})?$",
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

    @model_validator(mode="after")
    def _times_fit(self) -> Self:
        """slurmctld drops a partition DefaultTime above MaxTime (``_build_single_partitionline_info`` in
        src/slurmctld/read_config.c: "DefaultTime exceeds MaxTime"), and the validate step's ``slurm.max_time``
        fails a tenant whose partition MaxTime or normal QoS MaxWall is shorter than its wall limit, after
        every write: both are refused here instead."""
        max_time = duration_minutes(self.partition_max_time)
        if longer(duration_minutes(self.partition_default_time), max_time):
            raise ValueError(
                f"partition_default_time={self.partition_default_time} is longer than partition_max_time="
                f"{self.partition_max_time}; slurmctld would drop it: lower partition_default_time"
            )
        wall = duration_minutes(self.contract_wall_limit)
        for name, limit in (("partition_max_time", max_time), ("normal_qos.max_wall", self.normal_qos.max_wall)):
            minutes = limit if not isinstance(limit, str) else duration_minutes(limit)
            if longer(wall, minutes):
                raise ValueError(
                    f"contract_wall_limit={self.contract_wall_limit} is longer than {name}, so jobs could not run "
                    f"as long as the contract says: raise {name} or lower contract_wall_limit"
                )
        return self


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
    hostname: Annotated[str | None, AfterValidator(check_hostname)] = Field(
        None, pattern=r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$", description="default login.<slug>.example.internal"
    )
    replicas: int = Field(2, ge=1, le=10)
    chart_version: str = Field("1.4.x", pattern=r"^[0-9x.]+$")


class TenantContract(Strict):
    """One tenant as signed: capacity, people, storage, isolation, Slurm budget."""

    slug: str = Field(
        ..., pattern=SLUG_PATTERN, description="tenant-<name>: lowercase letters, digits and hyphens, max 32 characters"
    )
    display_name: Annotated[str, Field(min_length=1, max_length=100), AfterValidator(check_display_name)]
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
        if parse_size(self.storage.pvc_size) > parse_quantity(self.kube_quota.requests_storage):
            raise ValueError(
                f"storage.pvc_size={self.storage.pvc_size} is above kube_quota.requests_storage="
                f"{self.kube_quota.requests_storage}; the ResourceQuota would refuse the tenant PVC: lower "
                "storage.pvc_size or raise kube_quota.requests_storage"
            )
        keys_bytes = sum(len("\n".join(user.ssh_keys)) + 1 for user in self.users)
        if keys_bytes > MAX_SECRET_BYTES:
            raise ValueError(
                f"users[].ssh_keys add up to {keys_bytes} bytes, above the 1 MiB Kubernetes allows in the "
                "authorized-keys Secret: give each user fewer keys, or shorter ones (ssh-ed25519)"
            )
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
