"""The pure parts of ``tenantflow doctor``: the Pod Security Standards evaluator, the ``nvidia-smi -L`` counts and
a result's line. Expectations are written from the standards' and NVIDIA's documented examples, not computed."""

from __future__ import annotations

from typing import Any

from tenantflow.activities.common.podsecurity import violations
from tenantflow.activities.storage.dirs import helper_pod_spec
from tenantflow.models.weka_mount import directory_command
from tenantflow.starter.doctor.gpus import listing
from tenantflow.starter.doctor.report import exit_code, failed, ok, skipped

RESTRICTED_OK: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "app",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
    "volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": "home"}}],
}
ROOT_SSHD: dict[str, Any] = {
    "containers": [
        {"name": "sshd", "securityContext": {"runAsUser": 0, "capabilities": {"add": ["SYS_CHROOT", "SETUID"]}}}
    ]
}


def test_a_pod_written_to_the_restricted_standard_passes_every_level() -> None:
    assert violations("restricted", RESTRICTED_OK) == []
    assert violations("baseline", RESTRICTED_OK) == []


def test_a_root_sshd_passes_baseline_and_fails_restricted_on_each_rule() -> None:
    assert violations("baseline", ROOT_SSHD) == []
    found = violations("restricted", ROOT_SSHD)
    assert [v.split(" (")[0] for v in found] == [
        "allowPrivilegeEscalation != false",
        "unrestricted capabilities",
        "runAsNonRoot != true",
        "runAsUser=0",
        "seccompProfile",
    ]
    assert violations("privileged", ROOT_SSHD) == []


def test_baseline_refuses_host_namespaces_privilege_extra_capabilities_hostpath_and_host_ports() -> None:
    spec = {
        "hostNetwork": True,
        "containers": [
            {
                "name": "c",
                "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                "ports": [{"containerPort": 22, "hostPort": 2222}],
            }
        ],
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
    }
    assert [v.split(" (")[0] for v in violations("baseline", spec)] == [
        "host namespaces",
        "privileged",
        "non-default capabilities",
        "hostPort",
        "hostPath volumes",
    ]


def test_restricted_refuses_a_volume_type_outside_its_list() -> None:
    spec = {**RESTRICTED_OK, "volumes": [{"name": "nfs", "nfs": {"server": "s", "path": "/"}}]}
    assert violations("restricted", spec) == ['restricted volume types (volume "nfs" uses nfs)']


def test_the_weka_directory_job_tenantflow_renders_runs_at_baseline_not_restricted() -> None:
    spec = helper_pod_spec("claim", directory_command([]))
    assert violations("baseline", spec) == []
    assert "runAsUser=0" in " ".join(violations("restricted", spec))


def test_gpus_are_lines_starting_gpu_and_mig_devices_the_indented_lines() -> None:
    plain = "GPU 0: NVIDIA H200 (UUID: GPU-a)\nGPU 1: NVIDIA H200 (UUID: GPU-b)\n"
    mig = (
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-a)\n"
        "  MIG 3g.20gb     Device  0: (UUID: MIG-a0)\n"
        "  MIG 3g.20gb     Device  1: (UUID: MIG-a1)\n"
    )
    assert listing(plain) == (2, 0)
    assert listing(mig) == (1, 2)


def test_a_line_names_the_fix_only_on_failure_and_any_failure_exits_3() -> None:
    assert failed("x.y", "found it", "do this").line().split() == ["x.y", "FAIL", "found", "it", "fix:", "do", "this"]
    assert ok("x.y", "fine").line().split() == ["x.y", "ok", "fine"]
    assert skipped("x.y", "absent", "why").line().split() == ["x.y", "skip", "absent", "(why)"]
    assert exit_code([ok("a", ""), skipped("b", "", "")]) == 0
    assert exit_code([ok("a", ""), failed("b", "", "")]) == 3
