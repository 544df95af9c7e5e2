"""Worker and client configuration from the environment, and the env file the worker loads at start.

``TENANTFLOW_ENV_FILE`` names a dotenv file (``KEY=VALUE`` lines; blank lines and ``#`` comments
ignored; values may be quoted), read with python-dotenv. Its variables are exported to the
worker's environment unless already set there, so the activities' settings see them. The lab's
``lab.env`` is such a file; a production deployment can write one from its secret store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from dotenv import load_dotenv
from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

TASK_QUEUE = "tenantflow"
GUARDED_WORKFLOWS = (
    "TenantOnboarding,TenantChange,TenantOffboarding,WorkerEnrollment,WorkerDecommission,TenantLifecycle"
)
"""Where the four-eyes rule and verified approvers hold by default: onboarding, change, offboarding (its plan and the
purge), enrollment (its plan, submissions pause, adoption, uncordon and resume), decommission (the reset plan) and
renew."""


class TemporalSettings(BaseSettings):
    """How to reach Temporal; shared by the worker, the CLI and the Python API."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    address: str = Field("localhost:7233", alias="TEMPORAL_ADDRESS")
    namespace: str = Field("default", alias="TEMPORAL_NAMESPACE")
    task_queue: str = Field(TASK_QUEUE, alias="TENANTFLOW_TASK_QUEUE")
    codec_key_file: Path | None = Field(None, alias="TENANTFLOW_CODEC_KEY_FILE")
    codec_allow_plaintext: bool = Field(
        False,
        alias="TENANTFLOW_CODEC_ALLOW_PLAINTEXT",
        description="accept unencrypted payloads although keys are configured "
        "(only while plaintext histories written before are open)",
    )
    require_encryption: bool = Field(
        False,
        alias="TENANTFLOW_REQUIRE_ENCRYPTION",
        description="refuse to start without codec keys (TENANTFLOW_CODEC_KEY_FILE or TENANTFLOW_CODEC_KEYS) "
        "rather than send plaintext payloads",
    )
    approval_key: Path | None = Field(
        None,
        alias="TENANTFLOW_APPROVAL_KEY",
        description="OpenSSH private key (Ed25519) that signs this client's gate answers, so the worker can verify "
        "the approver (listed for them in the worker's TENANTFLOW_ALLOWED_SIGNERS)",
    )


class WorkerSettings(TemporalSettings):
    log_format: str = Field("console", alias="TENANTFLOW_LOG_FORMAT", pattern="^(json|console)$")
    log_level: str = Field("INFO", alias="TENANTFLOW_LOG_LEVEL")
    max_concurrent_activities: int = Field(32, alias="TENANTFLOW_MAX_ACTIVITIES", ge=1, le=1000)
    metrics_port: int | None = Field(None, alias="TENANTFLOW_METRICS_PORT")
    env_file: Path | None = Field(
        None, alias="TENANTFLOW_ENV_FILE", description="dotenv file (e.g. the lab's lab.env) loaded at start"
    )
    four_eyes: str = Field(
        GUARDED_WORKFLOWS,
        alias="TENANTFLOW_FOUR_EYES",
        description="comma-separated workflow types (TenantOnboarding) or gates of one "
        "(TenantOffboarding.confirm_purge) that the principal who started the run (or asked for the renewal) "
        "cannot approve, the starter verified by its start proof (a run started without one cannot be approved "
        "there); empty: nowhere",
    )
    verified_approvers: str = Field(
        GUARDED_WORKFLOWS,
        alias="TENANTFLOW_VERIFIED_APPROVERS",
        description="comma-separated workflow types or Type.gate whose answers need a verified approver (a signed "
        "proof); elsewhere a declared one (a Temporal UI payload) counts too; empty: nowhere",
    )
    principals_file: Path | None = Field(
        None, alias="TENANTFLOW_PRINCIPALS", description="TOML identity map: which identities are one principal"
    )
    allowed_signers_file: Path | None = Field(
        None,
        alias="TENANTFLOW_ALLOWED_SIGNERS",
        description="OpenSSH allowed-signers file: the keys that prove approvers, and for which principals",
    )
    max_heartbeat_timeout_s: float | None = Field(
        None,
        alias="TENANTFLOW_MAX_HEARTBEAT_TIMEOUT_S",
        gt=0,
        description="lower every step's heartbeat timeout to this many seconds (tests that kill workers; "
        "unset: the step catalogue's timeouts)",
    )
    deployment_name: str | None = Field(
        None,
        alias="TENANTFLOW_DEPLOYMENT_NAME",
        min_length=1,
        description="Temporal Worker Deployment this worker belongs to",
    )
    build_id: str | None = Field(
        None,
        alias="TENANTFLOW_BUILD_ID",
        min_length=1,
        description="this worker's version inside the deployment (image tag, git sha)",
    )

    @model_validator(mode="after")
    def _versioning_pair(self) -> Self:
        if (self.deployment_name is None) != (self.build_id is None):
            raise ValueError(
                "worker versioning needs both TENANTFLOW_DEPLOYMENT_NAME and TENANTFLOW_BUILD_ID (or neither)"
            )
        return self


def load_env_file(settings: WorkerSettings) -> None:
    """Export the dotenv file named by ``TENANTFLOW_ENV_FILE`` without overriding the environment."""
    if settings.env_file is None:
        return
    if not settings.env_file.is_file():
        raise FileNotFoundError(f"TENANTFLOW_ENV_FILE={settings.env_file}: no such file")
    load_dotenv(settings.env_file, override=False)
