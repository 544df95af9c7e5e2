"""Where the connection settings come from: the temporal CLI's variables and profiles, and explicit settings on top."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from tenantflow.worker.config import TemporalSettings
from tenantflow.worker.connect_errors import diagnose
from tenantflow.worker.temporal import TemporalConnectError, connect, connect_config
from tests.worker.harness import configure

PROFILES = """\
[profile.default]
address = "default.example:7233"

[profile.cloud]
address = "tenantflow.a1b2c.tmprl.cloud:7233"
namespace = "tenantflow.a1b2c"
api_key = "from-the-file"

[profile.cloud.tls]
server_name = "tenantflow.a1b2c.tmprl.cloud"
"""


@pytest.fixture
def profiles(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    configure(monkeypatch, tmp_path, {})
    path = tmp_path / "temporal.toml"
    path.write_text(PROFILES)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(path))
    return path


def test_nothing_set_means_the_local_dev_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    configure(monkeypatch, tmp_path, {})
    assert connect_config(TemporalSettings()) == {"target_host": "localhost:7233", "namespace": "default"}


def test_the_profile_named_by_temporal_profile_is_used(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert connect_config(TemporalSettings())["target_host"] == "default.example:7233"
    monkeypatch.setenv("TEMPORAL_PROFILE", "cloud")
    config = connect_config(TemporalSettings())
    assert config["target_host"] == "tenantflow.a1b2c.tmprl.cloud:7233"
    assert config["namespace"] == "tenantflow.a1b2c"
    assert config["api_key"] == "from-the-file"
    tls = config["tls"]
    assert isinstance(tls, TLSConfig) and tls.domain == "tenantflow.a1b2c.tmprl.cloud"


def test_variables_override_the_profile(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_PROFILE", "cloud")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "other.a1b2c")
    monkeypatch.setenv("TEMPORAL_API_KEY", "from-the-environment")
    config = connect_config(TemporalSettings())
    assert (config["namespace"], config["api_key"]) == ("other.a1b2c", "from-the-environment")


def test_explicit_settings_win_over_the_profile(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_PROFILE", "cloud")
    config = connect_config(TemporalSettings(TEMPORAL_ADDRESS="127.0.0.1:7233", TEMPORAL_NAMESPACE="default"))
    assert (config["target_host"], config["namespace"]) == ("127.0.0.1:7233", "default")
    assert config["api_key"] == "from-the-file"


def test_a_missing_profile_is_named(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_PROFILE", "staging")
    with pytest.raises(TemporalConnectError, match=r"TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE: .*'staging' not found"):
        connect_config(TemporalSettings())


def test_an_unreadable_certificate_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    configure(
        monkeypatch,
        tmp_path,
        {
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(tmp_path / "client.pem"),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(tmp_path / "client.key"),
        },
    )
    (tmp_path / "client.pem").write_text("not read: the key is missing")
    with pytest.raises(TemporalConnectError, match=r"^TEMPORAL_TLS_CLIENT_KEY_PATH: cannot read .*client\.key"):
        connect_config(TemporalSettings())


async def test_no_server_at_the_address_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    configure(monkeypatch, tmp_path, {"TEMPORAL_ADDRESS": "127.0.0.1:1"})
    with pytest.raises(TemporalConnectError, match=r"^TEMPORAL_ADDRESS: no Temporal server answers there"):
        await connect(TemporalSettings())


@pytest.mark.parametrize(
    ("error", "tls", "setting"),
    [
        ('Status { code: Unauthenticated, message: "Request unauthorized" }', True, "TEMPORAL_API_KEY"),
        (
            "ConnectError(Custom { kind: InvalidData, error: AlertReceived(CertificateRequired) })",
            True,
            "TEMPORAL_TLS_CLIENT_CERT_PATH",
        ),
        ('InvalidCertificate(NotValidForNameContext { expected: DnsName("x") })', True, "TEMPORAL_TLS_SERVER_NAME"),
        ("ConnectError(Custom { kind: InvalidData, error: InvalidContentType })", True, "TEMPORAL_TLS"),
        ("something nobody has seen", False, "TEMPORAL_ADDRESS / TEMPORAL_TLS_*"),
    ],
)
def test_errors_of_a_real_tls_server_name_the_setting(error: str, tls: bool, setting: str) -> None:
    message, _ = diagnose(error, tls=tls, api_key=True, client_cert=False)
    assert message.startswith(f"{setting}:")
