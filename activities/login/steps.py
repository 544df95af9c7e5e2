"""Login layer (runbook step 5): the SSH keys Secret, the login pod release, and its identity checks.

``login.release`` ensures a copy of the platform's LDAP bind Secret in the tenant
namespace (where the chart looks it up), the ``<slug>-authorized-keys`` Secret (one key
per username, public keys only) and the ``login-<slug>`` Flux HelmRelease (``helm.toolkit.fluxcd.io/v2``, the chart
from the HelmRepository ``LOGIN_CHART_SOURCE``; LDAP bind password by Secret name only), then waits, heartbeating,
at most ``LOGIN_READY_BUDGET_S``, until as many pods labelled ``app.kubernetes.io/instance=login-<slug>`` as the
contract's replicas are Running and Ready; when the budget runs out it fails, not to be retried, with a diagnosis
(:mod:`activities.login.diagnosis`: the release's ``Ready``/``Released`` conditions, the pods, their events, such as
a pod-security refusal). The plan shows the pod-security decision: the level the tenant namespace enforces, why,
and whether it admits the login pod the release asks for (:mod:`activities.common.podsecurity`).
``login.verify`` execs into every Ready login pod as runbook 5b does: ``getent passwd`` for every user, a hundred
names an exec (pre-warming nslcd's cache; uid/gid must match what identity learned), ``getent group <slug>``,
``ls /etc/ssh/authorized_keys.d/`` and ``sinfo -p <slug>``.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import kubeensure, manifests
from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.loginpod import (
    KEYS_DIR,
    getent_warm,
    is_ready,
    login_exec,
    login_pod_refusals,
    login_pods,
    passwd_entries,
    ready_login_pods,
)
from tenantflow.activities.common.manifests import Manifest
from tenantflow.activities.common.polling import from_poll_interval, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.activities.login.diagnosis import diagnosis
from tenantflow.models import runbook
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import EnsureResult, Finding
from tenantflow.models.tenant import TenantContract

LAYER = "login"
GONE_ATTEMPTS = 20


def release_manifest(contract: TenantContract) -> Manifest:
    cfg = settings()
    return manifests.login_release(
        contract,
        ldap_uri=cfg.ldap_outpost_uri,
        ldap_base_dn=cfg.ldap_base_dn,
        ldap_bind_dn=cfg.ldap_bind_dn,
        bind_password_secret=cfg.ldap_bind_secret,
        slurm_controller_host=f"{cfg.slurm_controller}.{cfg.slurm_namespace}.svc",
        chart_source=cfg.login_chart_ref,
    )


def pod_security(contract: TenantContract) -> dict[str, object]:
    """The pod-security decision the plan shows: what the tenant namespace enforces (``TENANT_POD_SECURITY_ENFORCE``)
    and reports, why, and whether that level admits the login container the release asks the chart for."""
    level = settings().tenant_pod_security_enforce
    refused = login_pod_refusals(level)
    labels = manifests.pod_security_labels(level)
    return {
        "namespace": contract.namespace,
        **{mode.removeprefix(manifests.POD_SECURITY_LABEL): value for mode, value in labels.items()},
        "why": manifests.LOGIN_POD_SECURITY_WHY,
        "loginPod": f'refused: violates PodSecurity "{level}:latest": {", ".join(refused)}' if refused else "admitted",
    }


def bind_secret(objs: KubeObjects, contract: TenantContract) -> Manifest:
    """The platform's LDAP bind Secret (in ``auth``) as a copy in the tenant namespace."""
    cfg = settings()
    source = objs.get("Secret", cfg.ldap_bind_secret, cfg.ldap_bind_secret_namespace)
    if source is None:
        raise fail(
            "NotFound",
            f"LDAP bind Secret {cfg.ldap_bind_secret_namespace}/{cfg.ldap_bind_secret} not "
            "found; create it from the outpost's bind account before onboarding",
        )
    return manifests.bind_secret_copy(contract, cfg.ldap_bind_secret, source.get("data") or {})


def _objects(objs: KubeObjects, contract: TenantContract) -> list[Manifest]:
    return [bind_secret(objs, contract), manifests.authorized_keys_secret(contract), release_manifest(contract)]


@defn(runbook.LOGIN.plan)
def plan(inp: StepInput) -> list[PlanStep]:
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    bind, secret, release = _objects(objs, contract)
    values = release["spec"]["values"]
    cfg = settings()
    return [
        kubeensure.plan_step(
            objs,
            LAYER,
            bind,
            contract.slug,
            {"copied_from": f"{cfg.ldap_bind_secret_namespace}/{cfg.ldap_bind_secret}", "keys": sorted(bind["data"])},
        ),
        kubeensure.plan_step(objs, LAYER, secret, contract.slug, {"users": sorted(secret["data"])}),
        kubeensure.plan_step(
            objs,
            LAYER,
            release,
            contract.slug,
            {
                "chart": release["spec"]["chart"]["spec"],
                "replicas": values["replicas"],
                "podSecurity": pod_security(contract),
                "securityContext": values["securityContext"],
                "hostname": contract.login_hostname,
                "bindPasswordSecret": values["ldap"]["bindPasswordSecret"],
                "sshKeysSecret": values["sshKeysSecret"],
                "slurmControllerHost": values["slurm"]["controllerHost"],
            },
        ),
    ]


def wait_ready(objs: KubeObjects, contract: TenantContract) -> None:
    """Wait (heartbeating, at most ``LOGIN_READY_BUDGET_S``) until the contract's replicas of login pods are Ready;
    then fail, not to be retried (a refused or crashing pod needs a person), with the diagnosis."""
    polled = poll_until(
        lambda: login_pods(objs, contract),
        lambda pods: sum(map(is_ready, pods)) >= contract.login.replicas,
        every=from_poll_interval(),
        budget_s=settings().login_ready_budget_s,
        detail=lambda pods: {"pods": {p["metadata"]["name"]: is_ready(p) for p in pods}},
        tolerate=transient,
    )
    if polled.done:
        return
    name = manifests.login_release_name(contract)
    release = objs.get("HelmRelease", name, contract.namespace)
    raise fail(
        "LoginNotReady",
        f"the login release gave up after {settings().login_ready_budget_s:g} s (LOGIN_READY_BUDGET_S): "
        + diagnosis(objs, contract.namespace, name, release, polled.value, contract.login.replicas),
    )


@defn(runbook.LOGIN_RELEASE)
def release(inp: StepInput) -> StepResult:
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    bind, keys, chart = _objects(objs, contract)
    results = [
        kubeensure.ensure(objs, LAYER, bind, contract.slug, inp.run_id),
        kubeensure.ensure(objs, LAYER, keys, contract.slug, inp.run_id, public_payload=True),
        kubeensure.ensure(objs, LAYER, chart, contract.slug, inp.run_id),
    ]
    wait_ready(objs, contract)
    return StepResult(results=results, facts=inp.facts)


def _passwd_findings(inp: StepInput, pod: str) -> list[Finding]:
    contract = inp.contract
    findings: list[Finding] = []
    entries = passwd_entries(contract, pod)
    for user in contract.usernames:
        fields = entries.get(user)
        if fields is None:
            findings.append(
                Finding.failed(
                    "login.getent_passwd",
                    f"getent passwd {user} on {pod} found nothing",
                    "check the LDAP outpost and nslcd on the login pod; "
                    "if only some users fail, raise the nslcd cache TTL (outpost rate limit)",
                )
            )
            continue
        known = inp.facts.users.get(user)
        if known and (fields[2], fields[3]) != (str(known.uid_number), str(known.gid_number)):
            findings.append(
                Finding.failed(
                    "login.getent_passwd",
                    f"{user} is uid {fields[2]} gid {fields[3]} on {pod} but "
                    f"{known.uid_number}/{known.gid_number} in LDAP",
                    "restart nslcd on the login pod (pkill -HUP nslcd): its cache or property mapping differs",
                )
            )
    return findings


def _group_findings(inp: StepInput, pod: str) -> list[Finding]:
    contract = inp.contract
    out = getent_warm(contract, pod, ["getent", "group", contract.slug])
    fields = out.stdout.strip().split(":")
    if out.exit_code != 0 or len(fields) < 4:
        return [
            Finding.failed(
                "login.getent_group",
                f"getent group {contract.slug} on {pod} found nothing",
                "check the Authentik group and the outpost's group search base",
            )
        ]
    findings: list[Finding] = []
    if inp.facts.group_gid is not None and fields[2] != str(inp.facts.group_gid):
        findings.append(
            Finding.failed(
                "login.getent_group",
                f"group {contract.slug} has gid {fields[2]} on {pod} but {inp.facts.group_gid} in Authentik",
                "fix the gidNumber property mapping",
            )
        )
    missing = sorted(set(contract.usernames) - set(filter(None, fields[3].split(","))))
    if missing:
        findings.append(
            Finding.failed(
                "login.getent_group",
                f"group {contract.slug} on {pod} lacks {', '.join(missing)}",
                "add the users to the Authentik group",
            )
        )
    return findings


def _keys_findings(contract: TenantContract, pod: str) -> list[Finding]:
    out = login_exec(contract, pod, ["ls", KEYS_DIR])
    listed = set(out.stdout.split())
    if out.exit_code != 0 or not listed:
        return [
            Finding.failed(
                "login.authorized_keys",
                f"authorized_keys is empty on {pod} ({KEYS_DIR} lists nothing)",
                f"sync the Secret {manifests.authorized_keys_secret_name(contract)} from Authentik's ssh_keys, "
                "check it, then restart the login pod to refresh the projected volume",
            )
        ]
    missing = sorted(set(contract.usernames) - listed)
    return (
        [
            Finding.failed(
                "login.authorized_keys",
                f"no authorized_keys on {pod} for {', '.join(missing)}",
                f"add their keys to the Secret {manifests.authorized_keys_secret_name(contract)} and restart "
                "the login pod",
            )
        ]
        if missing
        else []
    )


def _sinfo_findings(contract: TenantContract, pod: str) -> list[Finding]:
    out = login_exec(contract, pod, ["sinfo", "-p", contract.slug])
    if out.exit_code != 0 or contract.slug not in out.stdout:
        detail = out.stderr.strip() or out.stdout.strip() or f"exit {out.exit_code}"
        return [
            Finding.failed(
                "login.sinfo",
                f"sinfo -p {contract.slug} on {pod} failed: {detail}",
                "check that slurmctld is reachable from the tenant namespace and the partition exists",
            )
        ]
    return []


def _pod_findings(inp: StepInput, pod: str) -> list[Finding]:
    contract = inp.contract
    return (
        _passwd_findings(inp, pod)
        + _group_findings(inp, pod)
        + _keys_findings(contract, pod)
        + _sinfo_findings(contract, pod)
    )


def checks(inp: StepInput) -> list[Finding]:
    """Runbook 5b on every Ready login pod (found by label: each replica serves logins behind the Service); an ok
    finding when everything passed on all of them."""
    contract = inp.contract
    pods = ready_login_pods(KubeObjects(contract.cluster), contract)
    findings: list[Finding] = []
    if len(pods) < contract.login.replicas:
        findings.append(
            Finding.failed(
                runbook.LOGIN_VERIFY.name,
                f"{len(pods)} of {contract.login.replicas} login pods are Ready "
                f"({manifests.login_pod_selector(contract)}): {', '.join(pods) or 'none'}",
                "re-run login.release: it waits for every replica and says why one is not Ready",
            )
        )
    for pod in pods:
        findings += _pod_findings(inp, pod)
    if not findings:
        summary = f"{len(contract.users)} users resolve, group {contract.slug}, authorized_keys present, sinfo answers"
        findings.append(Finding.passed(runbook.LOGIN_VERIFY.name, f"{', '.join(pods)}: {summary}"))
    return findings


@defn(runbook.LOGIN_VERIFY)
def verify(inp: StepInput) -> StepResult:
    findings = checks(inp)
    errors = [f for f in findings if not f.ok]
    if errors:
        raise fail(
            "VerificationFailed",
            "login pod checks failed: " + "; ".join(f"{f.check}: {f.message} (fix: {f.fix})" for f in errors),
        )
    return StepResult(facts=inp.facts, findings=findings)


@defn(runbook.LOGIN.undo)
def undo(inp: UndoInput) -> list[EnsureResult]:
    """Delete the release and Secret we created; wait until the chart's pods are gone."""
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    done = kubeensure.undo(objs, LAYER, inp.results, contract.slug)
    if (
        inp.step != runbook.LOGIN_RELEASE.short
        or objs.get("HelmRelease", manifests.login_release_name(contract), contract.namespace) is not None
    ):
        return done
    gone = poll_until(
        lambda: [
            p["metadata"]["name"]
            for p in objs.list("Pod", contract.namespace, label_selector=manifests.login_pod_selector(contract))
        ],
        lambda left: not left,
        every=from_poll_interval(),
        attempts=GONE_ATTEMPTS,
        detail=lambda left: {"pods_left": left},
    )
    if not gone.done:
        raise ApplicationError(f"login pods {', '.join(gone.value)} are still there", type="Unavailable")
    return done


ACTIVITIES = [plan, release, verify, undo]
