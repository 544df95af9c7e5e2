"""activities/kube/ports.py: a Service port resolved to the pod port a NetworkPolicy must open (pure part)."""

from __future__ import annotations

from typing import Any

import pytest

from tenantflow.activities.kube import ports


def service(*entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "authentik-ldap-outpost", "namespace": "auth"},
        "spec": {"selector": {"app": "authentik-ldap-outpost"}, "ports": list(entries)},
    }


OUTPOST_POD = {
    "metadata": {"name": "outpost-0", "labels": {"app": "authentik-ldap-outpost"}},
    "spec": {
        "containers": [
            {"name": "metrics", "ports": [{"name": "http-metrics", "containerPort": 9300}]},
            {
                "name": "ldap",
                "ports": [{"name": "ldap", "containerPort": 3389}, {"name": "ldaps", "containerPort": 6636}],
            },
        ]
    },
}


def test_a_numeric_target_port_is_the_pod_port() -> None:
    assert ports.target_port(service({"name": "ldaps", "port": 636, "targetPort": 6636}), 636, []) == 6636


def test_without_target_port_the_pod_port_is_the_service_port() -> None:
    assert ports.target_port(service({"name": "ldaps", "port": 636, "protocol": "TCP"}), 636, []) == 636


def test_a_named_target_port_is_looked_up_in_the_selected_pods_container_ports() -> None:
    entry = {"name": "ldaps", "port": 636, "targetPort": "ldaps"}
    assert ports.target_port(service({"port": 389, "targetPort": "ldap"}, entry), 636, [OUTPOST_POD]) == 6636


def test_a_named_port_of_another_protocol_does_not_count() -> None:
    pod = {"spec": {"containers": [{"ports": [{"name": "ldaps", "containerPort": 6636, "protocol": "UDP"}]}]}}
    with pytest.raises(ports.PortUnresolved, match="port name 'ldaps', which no pod it selects declares"):
        ports.target_port(service({"port": 636, "targetPort": "ldaps"}), 636, [pod])


def test_a_named_port_no_pod_declares_names_the_service_and_the_fix() -> None:
    with pytest.raises(ports.PortUnresolved) as err:
        ports.target_port(service({"port": 636, "targetPort": "secure-ldap"}), 636, [OUTPOST_POD])
    assert str(err.value).startswith("Service auth/authentik-ldap-outpost maps 636/TCP to the port name 'secure-ldap'")
    assert "name the containerPort 'secure-ldap' in those pods, or give the Service a numeric targetPort" in str(
        err.value
    )


def test_a_service_without_the_port_names_its_ports_and_the_fix() -> None:
    with pytest.raises(ports.PortUnresolved) as err:
        ports.target_port(service({"port": 389, "targetPort": 3389}), 636, [OUTPOST_POD])
    assert str(err.value) == (
        "Service auth/authentik-ldap-outpost has no port 636/TCP (ports: 389/TCP); expose 636/TCP on the Service "
        "or point tenantflow at the Service that serves it"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [("60001-63000", (60001, 63000)), ("0-0", None), ("", None), ("(null)", None), ("63000-60001", None)],
)
def test_srun_port_range_as_scontrol_prints_it(value: str, expected: tuple[int, int] | None) -> None:
    assert ports.srun_port_range(value) == expected
