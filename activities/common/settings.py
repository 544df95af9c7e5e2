"""Where the external services are and how to authenticate: read from the worker's environment.

Secrets (tokens, passwords) live only here, in the worker process; workflow
inputs, histories and query results carry references such as Secret names.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from tenantflow.models.lifecycle import DEFAULT_REMINDER_DAYS
from tenantflow.models.records import DEFAULT_NAMESPACE as RECORDS_NAMESPACE


class ServiceSettings(BaseSettings):
    """Endpoints and credentials, from environment variables (see ``lab.env``)."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    authentik_url: str = Field("https://auth.example.internal", alias="AUTHENTIK_URL")
    authentik_token: SecretStr = Field(SecretStr(""), alias="AUTHENTIK_TOKEN")
    authentik_parent_group: str = Field("tenants", alias="AUTHENTIK_PARENT_GROUP")
    authentik_ca_file: str | None = Field(
        None,
        alias="AUTHENTIK_CA_FILE",
        description="PEM CA bundle that signed Authentik's certificate; default: the system's trust store",
    )
    weka_url: str = Field("https://weka-api.example.internal:14000", alias="WEKA_URL")
    weka_username: str = Field("admin", alias="WEKA_USERNAME")
    weka_password: SecretStr = Field(SecretStr(""), alias="WEKA_PASSWORD")
    weka_org: str = Field("Root", alias="WEKA_ORG")
    weka_ca_file: str | None = Field(
        None,
        alias="WEKA_CA_FILE",
        description="PEM CA bundle that signed the Weka API's certificate (often a cluster-internal CA); "
        "default: the system's trust store",
    )
    weka_helper_image: str = Field(
        "busybox:1.36",
        alias="WEKA_HELPER_IMAGE",
        description="image of the Job that makes tenant directories on a Weka mount and sets their owner "
        "(sh with stat -c, chown, chmod: BusyBox or coreutils)",
    )
    weka_helper_namespace: str = Field(
        "tenantflow-system",
        alias="WEKA_HELPER_NAMESPACE",
        description="platform namespace (pod-security baseline at most) where that "
        "Job runs as root to chown, so tenant namespaces need not admit it",
    )
    reservation_api_version: str = Field(
        "scheduling.example.io/v1alpha1",  # the runbook's sketch (activities.common.kubeobjects)
        alias="RESERVATION_API_VERSION",
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/v[0-9]+((alpha|beta)[0-9]+)?$",
        description="group/version of the reservation operator's Reservation and ReservationBinding kinds (the "
        "runbook's sketch is scheduling.example.io/v1alpha1; substitute your operator's, and grant the worker's "
        "role that group)",
    )
    ldap_url: str = Field("ldap://localhost:3389", alias="LDAP_URL")
    ldap_base_dn: str = Field("dc=auth,dc=example,dc=internal", alias="LDAP_BASE_DN")
    ldap_bind_dn: str = Field("cn=ldap-bind,ou=users,dc=auth,dc=example,dc=internal", alias="LDAP_BIND_DN")
    ldap_bind_password: SecretStr = Field(SecretStr(""), alias="LDAP_BIND_PASSWORD")
    ldap_bind_secret: str = Field(
        "ldap-bind-creds",
        alias="LDAP_BIND_SECRET",
        description="Secret holding the bind password, in the auth namespace",
    )
    ldap_bind_secret_namespace: str = Field("auth", alias="LDAP_BIND_SECRET_NAMESPACE")
    ldap_ca_file: str | None = Field(
        None,
        alias="LDAP_CA_FILE",
        description="PEM CA bundle that signed the outpost's certificate (ldaps); default: the system's trust store",
    )
    ldap_tls_insecure: bool = Field(
        False,
        alias="LDAP_TLS_INSECURE",
        description="labs only: do not verify the outpost's certificate (reported as a finding on every run)",
    )
    ldap_verify_budget_s: float = Field(
        360.0,
        ge=1,
        alias="LDAP_VERIFY_BUDGET_S",
        description="how long identity.verify_ldap waits for the outpost to serve "
        "new users; a cached outpost refreshes every few minutes",
    )
    ldap_outpost_uri: str = Field("ldaps://authentik-ldap-outpost.auth.svc:636", alias="LDAP_OUTPOST_URI")
    slurm_namespace: str = Field("slurm-control", alias="SLURM_NAMESPACE")
    slurm_controller: str = Field("slurmctld", alias="SLURM_CONTROLLER_DEPLOYMENT")
    slurm_controller_container: str = Field(
        "slurmctld",
        alias="SLURM_CONTROLLER_CONTAINER",
        description="the container of the slurmctld pod that commands run in",
    )
    slurmd_container: str = Field(
        "slurmd",
        alias="SLURMD_CONTAINER",
        description="the container of a slurmd (SUNK NodeSet) pod that checks run in",
    )
    slurmd_pod_selector: str = Field(
        "app.kubernetes.io/component=slurmd",
        alias="SLURMD_POD_SELECTOR",
        description="label selector of the slurmd (NodeSet) pods in SLURM_NAMESPACE",
    )
    exec_timeout_s: int = Field(
        45,
        alias="TENANTFLOW_EXEC_TIMEOUT",
        ge=1,
        le=55,
        description="timeout of one pod exec: below the activities' 60 s heartbeat timeout",
    )
    login_container: str = Field(
        "sshd", alias="LOGIN_CONTAINER", description="the container of a tenant login pod that checks run in"
    )
    login_chart_source: str = Field(
        "flux-system/sunk",
        alias="LOGIN_CHART_SOURCE",
        pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?/[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$",
        description="the Flux HelmRepository (namespace/name) that serves the login chart: the login release's "
        "spec.chart.spec.sourceRef (helm-controller must be allowed cross-namespace references to it)",
    )
    login_ready_budget_s: float = Field(
        600.0,
        ge=1,
        le=840,
        alias="LOGIN_READY_BUDGET_S",
        description="how long login.release waits for every login pod to be Ready (image pulls, the Weka mounts, "
        "sshd's start) before it gives up with a diagnosis from the release's conditions and the pods' events; "
        "kept inside the step's 15-minute start-to-close timeout",
    )
    tenant_pod_security_enforce: Literal["privileged", "baseline", "restricted"] = Field(
        "baseline",
        alias="TENANT_POD_SECURITY_ENFORCE",
        description="the Pod Security Standard a tenant namespace enforces (warn and audit stay restricted): "
        "baseline admits the login pod's root sshd (SETUID, SETGID, SYS_CHROOT); restricted refuses it",
    )
    slurm_partition_backend: str = Field(
        "include",
        alias="SLURM_PARTITION_BACKEND",
        description="where slurm.partition writes the tenant's partition line: include (a key of "
        "SLURM_PARTITIONS_CONFIGMAP that a self-managed slurm.conf Includes) or slinky (a line of the extraConf of "
        "Slinky's Controller SLURM_SLINKY_CONTROLLER); checked by the Slurm preflight",
    )
    slurm_partitions_configmap: str = Field("slurm-partitions", alias="SLURM_PARTITIONS_CONFIGMAP")
    slurm_slinky_controller: str = Field(
        "slurm",
        alias="SLURM_SLINKY_CONTROLLER",
        description="the Slinky Controller (slinky.slurm.net) in SLURM_NAMESPACE whose extraConf holds the "
        "tenant partitions (SLURM_PARTITION_BACKEND=slinky)",
    )
    slurm_partition_budget_s: float = Field(
        180.0,
        ge=1,
        alias="SLURM_PARTITION_BUDGET_S",
        description="how long slurm.partition waits for a partition change to reach slurmctld: first for "
        "slurmctld's configuration files to show it (a mounted ConfigMap reaches a pod after the kubelet's sync "
        "period plus its cache TTL, often 60-90 s), then, after one scontrol reconfigure (tenantflow's, or with the "
        "slinky backend Slinky's), for scontrol show partition to report it; kept 30 s inside the step's "
        "start-to-close timeout",
    )
    konduktor_bin: str = Field(
        "konduktor",
        alias="KONDUKTOR_BIN",
        description="the konduktor CLI the enrollment steps run (a name on PATH or a path)",
    )
    records_namespace: str = Field(
        RECORDS_NAMESPACE,
        alias="TENANTFLOW_RECORDS_NAMESPACE",
        pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
        description="platform namespace of the tenant and worker records",
    )
    notify_webhook_url: str | None = Field(
        None,
        alias="TENANTFLOW_NOTIFY_WEBHOOK_URL",
        description="where term notices are POSTed as JSON; unset: notices are only logged and shown by `term`",
    )
    temporal_ui_url: str = Field(
        "http://localhost:8233",
        alias="TENANTFLOW_TEMPORAL_UI_URL",
        description="the Temporal UI's base URL that gate notifications link runs to "
        "(`<url>/namespaces/<ns>/workflows/<id>/<run>/history`); default: the dev server's UI",
    )
    term_reminder_days: Annotated[list[int], NoDecode] = Field(
        list(DEFAULT_REMINDER_DAYS),
        alias="TENANTFLOW_TERM_REMINDER_DAYS",
        description="comma-separated days before a term's end that a reminder goes out (e.g. 30,7,1)",
    )
    http_timeout_s: float = Field(
        10.0,
        alias="TENANTFLOW_HTTP_TIMEOUT",
        gt=0,
        le=20,
        description="connect and read timeout of each Authentik and Weka request; with "
        "in-place retries (activities/common/httpretry.py) under the heartbeat timeout",
    )
    poll_interval_s: float = Field(0.5, alias="TENANTFLOW_POLL_INTERVAL")
    fanout: int = Field(
        8,
        ge=1,
        le=64,
        alias="TENANTFLOW_FANOUT",
        description="per-user REST calls (Authentik, Weka) a step has in flight at once",
    )

    @property
    def login_chart_ref(self) -> tuple[str, str]:
        """``LOGIN_CHART_SOURCE`` as (namespace, name)."""
        namespace, _, name = self.login_chart_source.partition("/")
        return namespace, name

    @field_validator("notify_webhook_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("is not an http:// or https:// URL; set the receiver's URL or leave the variable unset")
        return value

    @field_validator("temporal_ui_url")
    @classmethod
    def _ui_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(
                "is not an http:// or https:// URL; set the Temporal UI's address, e.g. https://temporal.example.internal"
            )
        return value.rstrip("/")

    @field_validator("term_reminder_days", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            days = sorted({int(part) for part in value.split(",") if part.strip()}, reverse=True)
        except ValueError:
            raise ValueError(f"{value!r} is not a comma-separated list of whole days; write e.g. 30,7,1") from None
        if any(not 1 <= day <= 3650 for day in days):
            raise ValueError(f"{value!r}: every reminder is 1 to 3650 days before the end; write e.g. 30,7,1")
        return days


@lru_cache(maxsize=1)
def settings() -> ServiceSettings:
    return ServiceSettings()
