"""docker-compose.yml against the Compose Specification's JSON schema, and the promises its header makes.

compose_spec.json is the Compose Specification's schema as the ``docker-compose`` 1.29.2 wheel on PyPI ships it
(``compose/config/compose_spec.json``, Apache-2.0; sha256 0dc04bd3...2bac), vendored unchanged: no Compose v2
binary or newer copy of the schema is available from the registries this project uses, so features added to the
specification after 2021 (``start_interval``, ``env_file`` objects ...) are deliberately not used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.principals import IdentityMap
from tenantflow.worker.signatures import AllowedSigners
from tests.packaging.envvars import listed, worker_variables

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).with_name("compose_spec.json")
ONE_SHOT = {"temporal-schema", "temporal-namespace", "worker-current"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose["services"]
    return found


def test_validates_against_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft201909Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert not errors, "\n".join(errors)


def test_the_schema_rejects_what_compose_rejects(compose: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text())
    broken = json.loads(json.dumps(compose))
    broken["services"]["worker"]["restart_policy"] = "always"
    assert not jsonschema.Draft201909Validator(schema).is_valid(broken)


def test_every_long_running_service_restarts_and_has_a_health_check(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        if name in ONE_SHOT:
            assert service["restart"] == "no", name
            continue
        assert service["restart"] == "unless-stopped", name
        assert service["healthcheck"]["test"][0] in {"CMD", "CMD-SHELL"}, name


def test_every_dependency_waits_for_a_condition(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        for dependency, how in service.get("depends_on", {}).items():
            assert dependency in services, (name, dependency)
            expected = "service_completed_successfully" if dependency in ONE_SHOT else "service_healthy"
            assert how == {"condition": expected}, (name, dependency)


def test_temporal_is_the_maintained_server_on_an_explicit_schema_and_retention(
    services: dict[str, dict[str, Any]],
) -> None:
    images = {name: service.get("image", "") for name, service in services.items()}
    assert not [image for image in images.values() if "auto-setup" in image]
    assert images["temporal"].startswith("temporalio/server:")
    assert images["temporal-schema"].startswith("temporalio/admin-tools:")
    schema_script = services["temporal-schema"]["command"][0]
    for step in ("create", "setup-schema -v 0.0", "update-schema -d"):
        assert f'temporal-sql-tool --db "$$db" {step}' in schema_script
    namespace = services["temporal-namespace"]
    assert namespace["environment"]["RETENTION"] == "${TEMPORAL_RETENTION:-720h}"
    assert '--retention "$$RETENTION"' in namespace["command"][0]
    for attribute in ("TenantSlug", "WorkerCluster", "Stage"):
        assert attribute in namespace["command"][0]


def test_the_ui_decodes_through_the_codec_server(services: dict[str, dict[str, Any]]) -> None:
    ui, codec = services["temporal-ui"], services["codec-server"]
    assert ui["environment"]["TEMPORAL_CODEC_ENDPOINT"] == "http://localhost:8081"
    assert "${TEMPORAL_BIND:-127.0.0.1}:8081:8081" in codec["ports"]
    command = codec["command"]
    assert command[0] == "codec-server"
    assert command[command.index("--cors-origin") + 1] == ui["environment"]["TEMPORAL_CORS_ORIGINS"]
    assert codec["environment"]["TENANTFLOW_CODEC_KEY_FILE"] == "/run/secrets/codec_keys"


def test_the_codec_server_reads_its_per_user_token_file(compose: dict[str, Any]) -> None:
    codec = compose["services"]["codec-server"]
    assert codec["environment"]["TENANTFLOW_API_TOKENS_FILE"] == "/run/secrets/api_tokens"
    assert "api_tokens" in codec["secrets"] and "api_tokens" not in compose["services"]["worker"]["secrets"]
    assert compose["secrets"]["api_tokens"] == {"file": "./secrets/api-tokens"}
    header = (ROOT / "docker-compose.yml").read_text().split("\nservices:")[0]
    assert "codec-server token " in header and "secrets/api-tokens" in header


def test_worker_runs_the_image_built_here(services: dict[str, dict[str, Any]]) -> None:
    worker = services["worker"]
    assert worker["build"] == "." and (ROOT / "Dockerfile").is_file()
    assert worker["read_only"] is True and worker["env_file"] == ["worker.env"]
    assert "command" not in worker and "volumes" in worker
    assert all(volume.endswith(":ro") for volume in worker["volumes"])
    assert "/readyz" in " ".join(worker["healthcheck"]["test"])
    assert worker["stop_grace_period"] == "90s"


def test_each_worker_service_is_one_build_of_one_worker_deployment(services: dict[str, dict[str, Any]]) -> None:
    """The image tag and TENANTFLOW_BUILD_ID of a worker service are one value; worker-current makes the worker's
    build current, and the previous build runs beside it only while its pinned runs drain (profile drain)."""
    builds = {"worker": "${TENANTFLOW_BUILD_ID:-local}", "worker-previous": "${TENANTFLOW_PREVIOUS_BUILD_ID:-previous}"}
    for name, build in builds.items():
        environment = services[name]["environment"]
        assert services[name]["image"] == f"tenantflow:{build}" and environment["TENANTFLOW_BUILD_ID"] == build
        assert environment["TENANTFLOW_DEPLOYMENT_NAME"] == "tenantflow"
        assert environment == services["worker"]["environment"] | {"TENANTFLOW_BUILD_ID": build}, name
    assert services["worker-previous"]["profiles"] == ["drain"] and "ports" not in services["worker-previous"]
    current = services["worker-current"]
    assert current["environment"]["BUILD_ID"] == builds["worker"]
    assert current["depends_on"] == {"worker": {"condition": "service_healthy"}}
    assert "set-current-version" in current["command"][0] and '--build-id "$$BUILD_ID"' in current["command"][0]


def test_worker_env_example_lists_exactly_the_variables_the_worker_reads() -> None:
    documented = listed(ROOT / "worker.env.example")
    read = worker_variables()
    assert not read - documented, f"read by the worker but not in worker.env.example: {sorted(read - documented)}"
    assert not documented - read, f"in worker.env.example but read by no code: {sorted(documented - read)}"


def test_the_variable_scan_finds_settings_and_environ_reads() -> None:
    read = worker_variables()
    assert {"TEMPORAL_ADDRESS", "AUTHENTIK_TOKEN", "TENANTFLOW_SMOKE_WRITE_MB", "TENANTFLOW_HEALTH_PORT"} <= read
    assert "TENANTFLOW_CODEC_KEYS" in read, "os.environ.get(KEYS_ENV) in worker/codec.py, through the constant"


def guarded_in(env_file: Path) -> dict[str, str]:
    """The approval settings an env file sets (uncommented)."""
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line and line[0] != "#")
    return {name: values[name] for name in ("TENANTFLOW_FOUR_EYES", "TENANTFLOW_VERIFIED_APPROVERS") if name in values}


def test_four_eyes_and_verified_approvers_are_on_in_what_ships(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TENANTFLOW_FOUR_EYES", raising=False)
    monkeypatch.delenv("TENANTFLOW_VERIFIED_APPROVERS", raising=False)
    defaults = WorkerSettings()
    guarded = "TenantOnboarding,TenantChange,TenantOffboarding,WorkerEnrollment,WorkerDecommission,TenantLifecycle"
    assert defaults.four_eyes == defaults.verified_approvers == guarded, "on without any setting"
    on = {"TENANTFLOW_FOUR_EYES": guarded, "TENANTFLOW_VERIFIED_APPROVERS": guarded}
    assert guarded_in(ROOT / "worker.env.example") == on
    assert guarded_in(ROOT / "deploy" / "base" / "worker-config.env") == on
    worker = services["worker"]
    assert worker["environment"]["TENANTFLOW_PRINCIPALS"] == "/etc/tenantflow/approvals/principals.toml"
    assert worker["environment"]["TENANTFLOW_ALLOWED_SIGNERS"] == "/etc/tenantflow/approvals/allowed_signers"
    assert "${APPROVALS_DIR:-./approvals}:/etc/tenantflow/approvals:ro" in worker["volumes"]
    header = (ROOT / "docker-compose.yml").read_text().split("\nservices:")[0]
    assert "cp -r deploy/base/approvals approvals" in header and "ON by default" in header
    shipped = ROOT / "deploy" / "base" / "approvals"
    assert IdentityMap.load(shipped / "principals.toml").principal("Alice@Ops-Laptop") == "alice"
    assert AllowedSigners.load(shipped / "allowed_signers").signers == (), "no key is trusted until one is added"


def test_the_worker_refuses_to_run_without_its_codec_keys(services: dict[str, dict[str, Any]]) -> None:
    worker = services["worker"]["environment"]
    assert worker["TENANTFLOW_REQUIRE_ENCRYPTION"] == "true" and worker["TENANTFLOW_CODEC_KEY_FILE"]
    shipped = dict(line.split("=", 1) for line in (ROOT / "deploy/base/worker-config.env").read_text().splitlines())
    assert shipped["TENANTFLOW_REQUIRE_ENCRYPTION"] == "true" and shipped["TENANTFLOW_CODEC_KEY_FILE"]


def test_temporal_and_its_ui_are_published_on_loopback_only(services: dict[str, dict[str, Any]]) -> None:
    published = {name: service.get("ports", []) for name, service in services.items()}
    loopback = "${TEMPORAL_BIND:-127.0.0.1}"
    for name, port in (("temporal", 7233), ("temporal-ui", 8080), ("codec-server", 8081)):
        assert published[name] == [f"{loopback}:{port}:{port}"], (name, published[name])
    header = (ROOT / "docker-compose.yml").read_text().split("\nservices:")[0]
    assert "127.0.0.1 only" in header and "authorizer" in header
    readme = (ROOT / "README.md").read_text()
    assert "TEMPORAL_AUTH_AUTHORIZER=default" in readme and "TEMPORAL_AUTH_CLAIM_MAPPER=default" in readme
