"""``tenantflow doctor`` against one lab of its own (issue 23): the lab as it starts passes every check and the
run writes nothing (the stand-ins' journals show only reads, the Weka login's session aside, and every pod exec is
a read-only command); then each of six estate mismatches, switched on where it happens on a real estate, fails
exactly its own check naming the fix, with exit 3, and is switched off again (and two more: tenantflow configured
to give tenant namespaces enforce=restricted; the Weka directory Job's namespace enforcing restricted). A refused
read fails its check naming the access to grant. Authentik 2025.10 serves ``parent`` and passes: tenantflow nests
through either field, read from the server's answer, not from the release.

The lab is this module's own (fresh: a login pod another test's onboarding left would be judged too)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.slurm_cli import is_write
from tenantflow.lab import pitfalls
from tenantflow.lab.authentik.app import PLATFORM_TENANTS_GROUP, build_app
from tenantflow.lab.authentik.versions import AUTHENTIK_2025_10
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.lab.httpbase import COMMITTED
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.cli import app
from tenantflow.starter.doctor import authentik, konduktor, kueue
from tenantflow.starter.doctor.report import Estate, Outcome
from tests.labfixture import (
    SESSION_PATHS,
    _client,
    authentik_api,
    exec_commands,
    exported,
    lab_env,
    lab_services,
    reset_journals,
    whole_lab,
)

CONTEXT = "tenant-cluster"
TARGET = KubeTarget(context=CONTEXT)
READ_ONLY_EXECS = (["scontrol", "show", "config"], ["cat"], ["nvidia-smi", "-L"])
CHECKS = 12


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabEndpoints]:
    yield from whole_lab(tmp_path_factory, "lab-doctor")


def doctor(lab: LabEndpoints, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """``tenantflow doctor --context tenant-cluster ARGS`` in this process with the lab's settings (and ``env``):
    exit code and stdout."""
    with lab_env(lab), exported(env or {}):
        result = CliRunner().invoke(app, ["doctor", "--context", CONTEXT, *args])
    return result.exit_code, result.stdout


def doctor_json(lab: LabEndpoints) -> tuple[int, dict[str, dict[str, str]]]:
    code, out = doctor(lab, "-o", "json")
    return code, {c["check"]: c for c in json.loads(out)["checks"]}


def requests_by_kind(lab: LabEndpoints) -> dict[str, list[str]]:
    """Every request a stand-in served since the journals were reset, as ``service: METHOD path``: ``writes`` (but
    the Weka login's session) and ``reads``."""
    found: dict[str, list[str]] = {"reads": [], "writes": []}
    for name, url in lab_services(lab).items():
        with _client(url) as http:
            entries = http.get("/_lab/requests").json()["requests"]
        for e in entries:
            write = e["method"] in {"POST", "PUT", "PATCH", "DELETE"} and e["injected"] in COMMITTED
            if not (write and e["path"].endswith(SESSION_PATHS)):
                found["writes" if write else "reads"].append(f"{name}: {e['method']} {e['path']}")
    return found


def test_the_lab_passes_and_the_run_writes_nothing(estate: LabEndpoints) -> None:
    reset_journals(estate)
    code, out = doctor(estate)
    lines = out.splitlines()
    assert code == 0, out
    assert len(lines) == CHECKS + 1 and lines[-1] == f"{CHECKS} checks on {CONTEXT}: 0 failed", out
    assert all(line.split()[1] in ("ok", "skip") for line in lines[:-1]), out
    assert "kueue.version" in next(line for line in lines if " skip " in line), out
    assert "konduktor, version" in next(line for line in lines if line.startswith("konduktor.cli")), out
    seen = requests_by_kind(estate)
    assert seen["writes"] == []
    for read in ("authentik: GET /api/v3/admin/version/", "weka: GET /api/v2/fileSystems", f"kube-{CONTEXT}: GET /api"):
        assert any(r.startswith(read) for r in seen["reads"]), (read, seen["reads"])
    execs = exec_commands(estate)
    assert execs and not any(map(is_write, execs)), execs
    assert all(any(argv[: len(read)] == read for read in READ_ONLY_EXECS) for argv in execs), execs


@contextmanager
def outpost_named_port_undeclared(lab: LabEndpoints) -> Iterator[None]:
    """The outpost Service's ldaps 636 pointing at a port name no outpost pod declares (the lab seeds 636 -> 6636,
    as Authentik's controller makes it)."""
    with lab_env(lab):
        objs = KubeObjects(TARGET)
        seeded = objs.get("Service", "authentik-ldap-outpost", "auth")["spec"]["ports"]  # type: ignore[index]
        named = [{**p, "targetPort": "secure-ldap"} if p["port"] == 636 else p for p in seeded]
        objs.patch("Service", "authentik-ldap-outpost", "auth", {"spec": {"ports": named}})
    try:
        yield
    finally:
        with lab_env(lab):
            objs.patch("Service", "authentik-ldap-outpost", "auth", {"spec": {"ports": seeded}})


@contextmanager
def enforce_without_limits(lab: LabEndpoints) -> Iterator[None]:
    """slurm.conf with ``AccountingStorageEnforce=associations,qos``, live in slurmctld after a reconfigure."""
    conf = lab.slurm_conf
    original = conf.read_text()
    assert "AccountingStorageEnforce=associations,limits,qos\n" in original
    reconfigure = ["scontrol", "reconfigure"]
    conf.write_text(original.replace("Enforce=associations,limits,qos", "Enforce=associations,qos"))
    subprocess.run(reconfigure, env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"}, check=True, timeout=30)
    try:
        yield
    finally:
        conf.write_text(original)
        subprocess.run(reconfigure, env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"}, check=True, timeout=30)


ROOT_SSHD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "login-rooted-0", "namespace": "default", "labels": {"app": "login"}},
    "spec": {
        "containers": [
            {
                "name": "sshd",
                "image": "ghcr.io/example/login:1",
                "securityContext": {"runAsUser": 0, "capabilities": {"add": ["SYS_CHROOT", "SETUID", "SETGID"]}},
            }
        ]
    },
}
"""A login pod as a multi-user sshd needs it: root, setuid (what ``restricted`` refuses)."""


@contextmanager
def root_login_pod(lab: LabEndpoints) -> Iterator[None]:
    """A root sshd login pod running in a namespace labelled, since, to enforce restricted: it would be refused when
    recreated (Pod Security Admission checks pods only as they are created)."""
    label = "pod-security.kubernetes.io/enforce"
    with lab_env(lab):
        objs = KubeObjects(TARGET)
        objs.create(ROOT_SSHD)
        objs.patch("Namespace", "default", None, {"metadata": {"labels": {label: "restricted"}}})
    try:
        yield
    finally:
        with lab_env(lab):
            objs.patch("Namespace", "default", None, {"metadata": {"labels": {label: None}}})
            objs.delete("Pod", "login-rooted-0", "default")


@contextmanager
def tenants_enforce_restricted(lab: LabEndpoints) -> Iterator[None]:
    """tenantflow configured to give tenant namespaces enforce=restricted, which refuses the login pod it asks for."""
    with exported({"TENANT_POD_SECURITY_ENFORCE": "restricted"}):
        yield


@contextmanager
def restricted_helper_namespace(lab: LabEndpoints) -> Iterator[None]:
    """The Weka directory Job's namespace labelled to enforce restricted, as tenant namespaces are."""
    label = "pod-security.kubernetes.io/enforce"
    with lab_env(lab):
        objs = KubeObjects(TARGET)
        seeded = ((objs.get("Namespace", "tenantflow-system") or {}).get("metadata") or {}).get("labels", {}).get(label)
        objs.patch("Namespace", "tenantflow-system", None, {"metadata": {"labels": {label: "restricted"}}})
    try:
        yield
    finally:
        with lab_env(lab):
            objs.patch("Namespace", "tenantflow-system", None, {"metadata": {"labels": {label: seeded}}})


@contextmanager
def no_csi_driver(lab: LabEndpoints) -> Iterator[None]:
    with lab_env(lab):
        objs = KubeObjects(TARGET)
        driver = objs.get("CSIDriver", "csi.weka.io")
        assert driver is not None
        objs.delete("CSIDriver", "csi.weka.io")
    try:
        yield
    finally:
        with lab_env(lab):
            objs.create({**driver, "metadata": {"name": "csi.weka.io"}})


@contextmanager
def mig_on(lab: LabEndpoints) -> Iterator[None]:
    pitfalls.switch(lab.state_dir, pitfalls.Pitfall.mig_on, True)
    try:
        yield
    finally:
        pitfalls.switch(lab.state_dir, pitfalls.Pitfall.mig_on, False)


@contextmanager
def no_platform_group(lab: LabEndpoints) -> Iterator[None]:
    """The platform group ``tenants`` renamed in Authentik (so AUTHENTIK_PARENT_GROUP names no group)."""
    with authentik_api(lab) as ak:
        pk = ak.get("/core/groups/", params={"name": "tenants"}).json()["results"][0]["pk"]
        ak.patch(f"/core/groups/{pk}/", json={"name": "platform-tenants"}).raise_for_status()
        try:
            yield
        finally:
            ak.patch(f"/core/groups/{pk}/", json={"name": "tenants"}).raise_for_status()


Mismatch = Callable[[LabEndpoints], AbstractContextManager[None]]
MISMATCHES: list[tuple[Mismatch, str, str, str]] = [
    (
        outpost_named_port_undeclared,
        "ldap.outpost_port",
        "maps 636/TCP to the port name 'secure-ldap', which no pod it selects declares",
        "name the containerPort 'secure-ldap' in those pods, or give the Service a numeric targetPort",
    ),
    (enforce_without_limits, "slurm.enforcement", "associations,qos lacks limits", "associations,limits,qos"),
    (root_login_pod, "login.pod_security", "runAsNonRoot != true", "securityContext the level admits"),
    (
        tenants_enforce_restricted,
        "login.pod_security",
        'refuse the login pod tenantflow\'s release asks for: violates PodSecurity "restricted:latest"',
        "TENANT_POD_SECURITY_ENFORCE=baseline",
    ),
    (restricted_helper_namespace, "storage.helper_security", "runAsUser=0", "enforce=baseline"),
    (no_csi_driver, "storage.csi_driver", "no CSIDriver csi.weka.io", "install csi-wekafs"),
    (mig_on, "nodes.gpus", "MIG is on", "disable MIG"),
    (no_platform_group, "authentik.groups", "no platform group 'tenants'", "create the group 'tenants'"),
]


@pytest.mark.parametrize(("mismatch", "check", "found", "fix"), MISMATCHES, ids=[m[1] for m in MISMATCHES])
def test_each_mismatch_fails_its_own_check_naming_the_fix(
    estate: LabEndpoints, mismatch: Mismatch, check: str, found: str, fix: str
) -> None:
    with mismatch(estate):
        code, results = doctor_json(estate)
    assert code == 3
    assert [name for name, r in results.items() if r["outcome"] == Outcome.fail] == [check], results
    assert found in results[check]["found"] and fix in results[check]["fix"], results[check]


def test_a_cluster_the_registry_does_not_know_is_refused_before_any_read(estate: LabEndpoints) -> None:
    with lab_env(estate):
        result = CliRunner().invoke(app, ["doctor", "--context", "no-such-cluster"])
    assert result.exit_code == 2
    assert "--context no-such-cluster: cluster 'no-such-cluster' is not in the cluster registry" in result.output


def test_a_refused_read_fails_its_check_naming_the_access_to_grant(estate: LabEndpoints) -> None:
    code, out = doctor(estate, env={"AUTHENTIK_TOKEN": "not-the-token"})
    assert code == 3
    line = next(line for line in out.splitlines() if line.startswith("authentik.groups"))
    assert " FAIL cannot read: authentik answered HTTP 403" in line, line
    assert "fix: grant the API token (AUTHENTIK_TOKEN) read access" in line, line


def test_kueue_is_checked_where_it_is_served_and_konduktor_skipped_without_its_setting(estate: LabEndpoints) -> None:
    with lab_env(estate):
        served = kueue.kueue_version(Estate(KubeTarget(context="worker")))
    assert served.outcome is Outcome.ok and "v1beta2" in served.found, served
    unconfigured = konduktor.konduktor_version(Estate(TARGET))
    assert unconfigured.outcome is Outcome.skip and unconfigured.fix == "enrollment is not configured", unconfigured


async def test_authentik_2025_10_nests_by_parent_and_passes(tmp_path: Path) -> None:
    token = "doctor-token"
    runner = web.AppRunner(build_app(token, seed_groups=(PLATFORM_TENANTS_GROUP,), version=AUTHENTIK_2025_10))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        with exported({"AUTHENTIK_URL": url, "AUTHENTIK_TOKEN": token}):
            result = await asyncio.to_thread(authentik.authentik_groups, Estate(TARGET))
    finally:
        await runner.cleanup()
    assert result.outcome is Outcome.ok, result
    assert result.found.startswith(f"Authentik {AUTHENTIK_2025_10}; groups nest by 'parent' (one parent"), result
