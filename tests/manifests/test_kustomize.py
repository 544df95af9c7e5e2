"""deploy/: the example overlay renders with ``kubectl kustomize``, passes ``kubernetes-validate --strict`` for the
target minor, is applied by kubectl to the lab's Kubernetes emulator, and keeps the promises of its comments: one
worker Deployment per build id, each polling as the Worker Deployment version its name, label and image say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tenantflow.models.records import DEFAULT_NAMESPACE
from tests.lab.kubeapi.conftest import Cluster, cluster  # noqa: F401  (the emulator fixture, with its seed)
from tests.packaging.envvars import listed

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = ROOT / "deploy" / "overlays" / "example"
KUBERNETES_MINOR = "1.32"
SECRETS = {
    "AUTHENTIK_TOKEN",
    "WEKA_PASSWORD",
    "LDAP_BIND_PASSWORD",
    "TEMPORAL_API_KEY",
    "TENANTFLOW_CODEC_KEYS",
    "TEMPORAL_TLS_CLIENT_KEY_DATA",
}
FILE_SECRETS = {"TENANTFLOW_CODEC_KEYS": "codec-keys", "TEMPORAL_TLS_CLIENT_KEY_DATA": "temporal-tls"}
LONGEST_HEARTBEAT_TIMEOUT_S = 60
VERSION = "app.kubernetes.io/version"
BUILDS = ("0.1.0", "0.2.0")
"""The builds the example overlay runs (builds/): 0.1.0 draining, 0.2.0 current."""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kustomize") / "rendered.yaml"
    proc = subprocess.run(["kubectl", "kustomize", str(OVERLAY)], capture_output=True, text=True, check=True)
    out.write_text(proc.stdout)
    return out


@pytest.fixture(scope="module")
def objects(rendered: Path) -> list[dict[str, Any]]:
    return [obj for obj in yaml.safe_load_all(rendered.read_text()) if obj]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == kind}


def worker_builds(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The worker Deployments by the build id of their version label."""
    workers = [d for d in by_kind(objects, "Deployment").values() if d["metadata"]["name"].startswith("tenantflow-w")]
    return {d["metadata"]["labels"][VERSION]: d for d in workers}


def current_worker(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The pod spec of the newest build's workers (the image the codec server and the setup Job run)."""
    pod: dict[str, Any] = worker_builds(objects)[BUILDS[-1]]["spec"]["template"]["spec"]
    return pod


def test_passes_strict_validation_for_the_target_minor(rendered: Path, objects: list[dict[str, Any]]) -> None:
    validate = Path(sys.executable).parent / "kubernetes-validate"
    proc = subprocess.run(
        [str(validate), "--strict", "--kubernetes-version", KUBERNETES_MINOR, str(rendered)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("passed for resource") == len(objects)


def test_the_lab_apiserver_accepts_every_object(
    cluster: Cluster,  # noqa: F811
    objects: list[dict[str, Any]],
) -> None:
    applied = cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    assert applied.stdout.count(" created") + applied.stdout.count(" configured") == len(objects), applied.stdout
    names = [f"tenantflow-worker-{build.replace('.', '-')}" for build in BUILDS]
    pdbs = [["get", "poddisruptionbudget", name, "-n", "tenantflow", "-o", "yaml"] for name in names]
    first = [yaml.safe_load(cluster.kubectl(*pdb).stdout) for pdb in pdbs]
    assert [pdb["spec"]["maxUnavailable"] for pdb in first] == [1, 1]
    again = cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    # a PodDisruptionBudget's selector is patchStrategy=replace, so kubectl's patch for it is never empty and it
    # says "configured" on a real cluster too (Azure/eno#246); the server finds nothing to change
    assert again.stdout.count(" unchanged") == len(objects) - len(BUILDS), again.stdout
    for name, pdb, before in zip(names, pdbs, first, strict=True):
        assert f"poddisruptionbudget.policy/{name} configured" in again.stdout, again.stdout
        after = yaml.safe_load(cluster.kubectl(*pdb).stdout)
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    for name in names:
        worker = cluster.kubectl("get", "deployment", name, "-n", "tenantflow", "-o", "yaml").stdout
        assert yaml.safe_load(worker)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 90


def test_one_deployment_per_build_id_polls_as_that_version(objects: list[dict[str, Any]]) -> None:
    """A build's workers are their own Deployment, named, labelled (selector included) and tagged with its build id,
    and take TENANTFLOW_BUILD_ID from that label: a new build is a Deployment beside the old one, never a rolling
    update that would replace the pods the old build's pinned runs need."""
    builds = worker_builds(objects)
    assert sorted(builds) == sorted(BUILDS) and len(by_kind(objects, "Deployment")) == len(BUILDS) + 1
    config = next(
        cm for cm in by_kind(objects, "ConfigMap").values() if cm["metadata"]["name"].startswith("tenantflow-wo")
    )
    assert config["data"]["TENANTFLOW_DEPLOYMENT_NAME"] == "tenantflow", "every build joins one Worker Deployment"
    assert "TENANTFLOW_BUILD_ID" not in config["data"]
    pdbs = by_kind(objects, "PodDisruptionBudget")
    for build, deployment in builds.items():
        name, spec = deployment["metadata"]["name"], deployment["spec"]
        assert name == f"tenantflow-worker-{build.replace('.', '-')}"
        assert spec["selector"]["matchLabels"] == {"app.kubernetes.io/name": "tenantflow-worker", VERSION: build}
        assert spec["template"]["metadata"]["labels"][VERSION] == build
        (container,) = spec["template"]["spec"]["containers"]
        assert container["image"] == f"registry.example.internal/platform/tenantflow:{build}"
        env = {e["name"]: e for e in container["env"]}
        assert env["TENANTFLOW_BUILD_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.labels['{VERSION}']"
        assert "TENANTFLOW_DEPLOYMENT_NAME" not in env
        assert container["envFrom"] == [{"configMapRef": {"name": config["metadata"]["name"]}}]
        assert pdbs[name]["spec"]["selector"] == spec["selector"], "each build's disruption budget is its own"


@pytest.mark.parametrize("build", BUILDS)
def test_worker_pod_is_hardened_and_probed(objects: list[dict[str, Any]], build: str) -> None:
    worker = worker_builds(objects)[build]["spec"]["template"]["spec"]
    assert worker["terminationGracePeriodSeconds"] > LONGEST_HEARTBEAT_TIMEOUT_S
    assert worker["securityContext"]["runAsNonRoot"] is True and worker["securityContext"]["runAsUser"] >= 1000
    (container,) = worker["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"]) & set(container["resources"]["limits"])
    assert container["image"] == f"registry.example.internal/platform/tenantflow:{build}"


def test_credentials_come_only_from_secret_references(objects: list[dict[str, Any]]) -> None:
    configmaps = by_kind(objects, "ConfigMap")
    config = next(cm for name, cm in configmaps.items() if name.startswith("tenantflow-worker-config-"))
    assert not set(config["data"]) & SECRETS
    assert set(config["data"]) <= listed(ROOT / "worker.env.example")
    for deployment in worker_builds(objects).values():
        worker = deployment["spec"]["template"]["spec"]
        env = {e["name"]: e for e in worker["containers"][0]["env"]}
        for name in SECRETS - set(FILE_SECRETS):
            assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "tenantflow-credentials"
        volumes = {v["name"]: v for v in worker["volumes"]}
        for volume in FILE_SECRETS.values():
            assert volumes[volume]["secret"]["secretName"] == f"tenantflow-{volume}"
    assert config["data"]["TENANTFLOW_CODEC_KEY_FILE"].startswith("/etc/tenantflow/codec/")
    assert config["data"]["TEMPORAL_TLS_CLIENT_KEY_PATH"].startswith("/etc/tenantflow/tls/")


def test_rbac_is_bounded(objects: list[dict[str, Any]]) -> None:
    rules = [
        (role["metadata"].get("namespace"), rule)
        for kind in ("ClusterRole", "Role")
        for role in by_kind(objects, kind).values()
        for rule in role["rules"]
    ]
    for namespace, rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], rule
        assert not {"escalate", "impersonate", "watch"} & set(rule["verbs"]), rule
        if "secrets" in rule["resources"] and namespace != DEFAULT_NAMESPACE:
            assert "list" not in rule["verbs"], "Secrets are listed only in the records namespace (the drift check)"
        if "bind" in rule["verbs"]:
            assert rule["resourceNames"] == ["edit"], "bind only the role the tenant RoleBinding names"
    bindings = by_kind(objects, "ClusterRoleBinding") | by_kind(objects, "RoleBinding")
    for binding in bindings.values():
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "tenantflow-worker", "namespace": "tenantflow"}
        ]


def test_a_metrics_service_selects_every_build(objects: list[dict[str, Any]]) -> None:
    metrics = by_kind(objects, "Service")["tenantflow-worker-metrics"]["spec"]
    assert metrics["ports"][0]["port"] == 9464
    for deployment in worker_builds(objects).values():
        assert metrics["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    codec = by_kind(objects, "Service")["tenantflow-codec-server"]["spec"]
    assert codec["ports"][0]["port"] == 8081


def test_the_codec_server_reads_its_per_user_token_file_from_a_secret(objects: list[dict[str, Any]]) -> None:
    codec = by_kind(objects, "Deployment")["tenantflow-codec-server"]["spec"]["template"]["spec"]
    (container,) = codec["containers"]
    tokens_file = {e["name"]: e["value"] for e in container["env"]}["TENANTFLOW_API_TOKENS_FILE"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in codec["volumes"]}
    [(volume, path)] = [(name, path) for name, path in mounts.items() if tokens_file.startswith(f"{path}/")]
    assert volumes[volume]["secret"]["secretName"] == "tenantflow-api-tokens"
    assert tokens_file == f"{path}/tokens", "the key README's kubectl create secret names"


def test_the_worker_reads_its_approval_rules_from_a_config_map(objects: list[dict[str, Any]]) -> None:
    config = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("tenantflow-w"))
    guarded = "TenantOnboarding,TenantChange,TenantOffboarding,WorkerEnrollment,WorkerDecommission,TenantLifecycle"
    assert config["data"]["TENANTFLOW_FOUR_EYES"] == config["data"]["TENANTFLOW_VERIFIED_APPROVERS"] == guarded
    worker = current_worker(objects)
    (container,) = worker["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    approvals = next(v for v in worker["volumes"] if v["name"] == "approvals")["configMap"]["name"]
    files = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == approvals)["data"]
    assert config["data"]["TENANTFLOW_PRINCIPALS"] == f"{mounts['approvals']}/principals.toml"
    assert config["data"]["TENANTFLOW_ALLOWED_SIGNERS"] == f"{mounts['approvals']}/allowed_signers"
    assert set(files) == {"principals.toml", "allowed_signers"}


def test_a_job_creates_the_search_attributes_as_the_worker_connects(objects: list[dict[str, Any]]) -> None:
    """``tenantflow setup`` from the worker's image, Temporal settings and credentials (README "Deploying"), hardened
    as the worker is, and re-run by the next apply once it has removed itself."""
    job = by_kind(objects, "Job")["tenantflow-setup"]["spec"]
    pod = job["template"]["spec"]
    worker = current_worker(objects)
    [setup], [work] = pod["containers"], worker["containers"]
    assert setup["args"] == ["setup"] and setup["image"] == work["image"]
    assert setup["envFrom"] == work["envFrom"], "the worker's Temporal address, namespace, TLS paths and codec keys"
    api_key = next(e for e in work["env"] if e["name"] == "TEMPORAL_API_KEY")
    assert api_key in setup["env"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in setup["volumeMounts"]:
        if mount["name"] != "tmp":
            assert mount in work["volumeMounts"] and volumes[mount["name"]] in worker["volumes"], mount
    assert {"codec-keys", "temporal-tls"} <= set(volumes)
    assert setup["securityContext"] == work["securityContext"] and pod["securityContext"] == worker["securityContext"]
    assert pod["restartPolicy"] == "OnFailure" and pod["automountServiceAccountToken"] is False
    assert job["ttlSecondsAfterFinished"] > 0, "a finished Job is removed, so the next apply can create it again"


def test_the_worker_gets_the_konduktor_cli_from_an_init_container(objects: list[dict[str, Any]]) -> None:
    """README "The konduktor CLI": the init container copies the CLI from the operator's image into an emptyDir the
    worker mounts read-only, where ``KONDUKTOR_BIN`` points; a plain copy, nothing downloaded at run time."""
    config = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("tenantflow-w"))
    deployments = by_kind(objects, "Deployment")
    for build in BUILDS:
        worker = deployments[f"tenantflow-worker-{build.replace('.', '-')}"]["spec"]["template"]["spec"]
        check_konduktor_init(worker, Path(config["data"]["KONDUKTOR_BIN"]))


def check_konduktor_init(worker: dict[str, Any], konduktor: Path) -> None:
    """One build's worker pod: the init container fills the read-only mount ``KONDUKTOR_BIN`` names."""
    [init], (container,) = worker["initContainers"], worker["containers"]
    volumes = {v["name"]: v for v in worker["volumes"]}
    [mount] = [m for m in container["volumeMounts"] if konduktor.parent == Path(m["mountPath"])]
    assert mount["readOnly"] is True and set(volumes[mount["name"]]) == {"name", "emptyDir"}
    [filled] = [m for m in init["volumeMounts"] if m["name"] == mount["name"]]
    assert not filled.get("readOnly")
    assert init["command"] == ["cp", "/usr/local/bin/konduktor", str(Path(filled["mountPath"]) / konduktor.name)]
    assert init["image"] == "registry.example.internal/platform/konduktor:0.1.0", "the overlay's images: entry"
    assert init["securityContext"] == container["securityContext"]
    assert {"cpu", "memory"} <= set(init["resources"]["requests"]) & set(init["resources"]["limits"])
