"""The lab's kubeconfig reader (what the konduktor stand-in connects with) against the files the lab writes and
the kinds of user it does not serve."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tenantflow.lab.kubeapi.kubeconfig import KubeconfigError, KubeContext, read_endpoint, write_kubeconfig

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_reads_back_the_server_ca_and_token_of_the_named_or_current_context(tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "config",
        [KubeContext("hub", "https://127.0.0.1:1", "hub-token", ca_pem=CA), KubeContext("plain", "http://h:2", "t2")],
    )
    hub = read_endpoint(str(path), None)
    assert (hub.server, hub.token, hub.ca_pem) == ("https://127.0.0.1:1", "hub-token", CA)
    plain = read_endpoint(str(path), "plain")
    assert (plain.server, plain.token, plain.ca_pem) == ("http://h:2", "t2", None)


def test_kubeconfig_env_and_token_file_are_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("from-file\n")
    (tmp_path / "ca.pem").write_bytes(CA)
    config = {
        "current-context": "c",
        "clusters": [
            {"name": "k", "cluster": {"server": "https://k:6443", "certificate-authority": str(tmp_path / "ca.pem")}}
        ],
        "users": [{"name": "u", "user": {"tokenFile": str(tmp_path / "token")}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    (tmp_path / "kc").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'kc'}:{tmp_path / 'other'}")
    found = read_endpoint(None, None)
    assert (found.server, found.token, found.ca_pem) == ("https://k:6443", "from-file", CA)


@pytest.mark.parametrize(
    ("user", "context", "message"),
    [
        ({"client-certificate-data": "x", "client-key-data": "y"}, "c", "has no token or tokenFile"),
        ({"token": "t"}, "missing", "no context named 'missing'"),
        ({"tokenFile": "/nonexistent/token"}, "c", "cannot read a file it names"),
    ],
)
def test_what_it_cannot_use_is_refused_naming_the_entry(
    tmp_path: Path, user: dict[str, str], context: str, message: str
) -> None:
    config = {
        "clusters": [{"name": "k", "cluster": {"server": "https://k"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    (tmp_path / "kc").write_text(yaml.safe_dump(config))
    with pytest.raises(KubeconfigError, match=message):
        read_endpoint(str(tmp_path / "kc"), context)
