"""Pod Security Admission on pod creation, as kube-apiserver's built-in ``PodSecurity`` admission plugin does it.

Ported from kubernetes/pod-security-admission: the namespace's ``pod-security.kubernetes.io/enforce`` (and
``warn``) labels (``api/constants.go``; no label: ``privileged``, which checks nothing); the checks of
``policy/check_*.go`` that the lab's pods can hit, each with its ``ForbiddenReason`` and ``ForbiddenDetail`` words
(``helpers.go``'s ``pluralize`` and ``joinQuote``); their order (``policy/registry.go``: the baseline check IDs
sorted, then the restricted ones; ``restricted`` drops the baseline checks its own override:
``capabilities_baseline``, ``hostPathVolumes``, ``seccompProfile_baseline``); the refusal
(``admission/admission.go`` ``EvaluatePod`` and ``response.go``: 403 Forbidden, ``pods "<name>" is forbidden:
violates PodSecurity "<level>:<version>": <reason> (<detail>), ...``, ``policy/checks.go``
``ForbiddenDetail``) and the warning of the ``warn`` level (``would violate PodSecurity ...``, only when the pod
is admitted). Not ported: exemptions, AppArmor, SELinux, procMount, sysctls, host probes and Windows checks, and
the per-version variants (every level is evaluated as ``latest``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tenantflow.lab.kubeapi.errors import ApiError

LABEL_PREFIX = "pod-security.kubernetes.io/"
LATEST = "latest"
Spec = dict[str, Any]
Result = tuple[str, str] | None
"""``(ForbiddenReason, ForbiddenDetail)`` of a failed check, None when it passes."""

BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP"}
    | {"SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)
"""``capabilities_allowed_1_0`` of ``check_capabilities_baseline.go``."""
RESTRICTED_VOLUME_SOURCES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected"}
    | {"secret"}
)
"""The volume sources ``check_restrictedVolumes.go`` admits."""


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _quote(items: list[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def _containers(spec: Spec) -> Iterator[Spec]:
    """``visitContainers``: init containers, containers, ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _sc(obj: Spec) -> Spec:
    return obj.get("securityContext") or {}


def _named(kind: str, names: list[str]) -> str:
    return f"{_plural(kind, kind + 's', len(names))} {_quote(names)}"


def capabilities_baseline(spec: Spec) -> Result:
    bad, caps = [], set()
    for c in _containers(spec):
        extra = [cap for cap in (_sc(c).get("capabilities") or {}).get("add") or [] if cap not in BASELINE_CAPABILITIES]
        if extra:
            bad.append(c.get("name", ""))
            caps.update(extra)
    if not bad:
        return None
    detail = f"{_named('container', bad)} must not include {_quote(sorted(caps))} in securityContext.capabilities.add"
    return "non-default capabilities", detail


def host_namespaces(spec: Spec) -> Result:
    found = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    return ("host namespaces", ", ".join(found)) if found else None


def host_path_volumes(spec: Spec) -> Result:
    names = [v.get("name", "") for v in spec.get("volumes") or [] if "hostPath" in v]
    return ("hostPath volumes", _named("volume", names)) if names else None


def host_ports(spec: Spec) -> Result:
    bad, ports = [], set()
    for c in _containers(spec):
        used = [str(p["hostPort"]) for p in c.get("ports") or [] if p.get("hostPort")]
        if used:
            bad.append(c.get("name", ""))
            ports.update(used)
    if not bad:
        return None
    uses = _plural("uses", "use", len(bad))
    return "hostPort", f"{_named('container', bad)} {uses} {_plural('hostPort', 'hostPorts', len(ports))} " + ", ".join(
        sorted(ports)
    )


def privileged(spec: Spec) -> Result:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("privileged")]
    return ("privileged", f"{_named('container', bad)} must not set securityContext.privileged=true") if bad else None


def _seccomp(spec: Spec, valid: Callable[[str], bool], implicit: bool) -> Result:
    """``check_seccompProfile_baseline.go`` (``implicit`` False) and ``_restricted.go`` (True): explicit bad
    types first; under restricted, a container without a profile where the pod sets none."""
    setters, values = [], set()
    pod_type = (_sc(spec).get("seccompProfile") or {}).get("type")
    if pod_type is not None and not valid(pod_type):
        setters.append("pod")
        values.add(pod_type)
    explicit, missing = [], []
    for c in _containers(spec):
        kind = (_sc(c).get("seccompProfile") or {}).get("type")
        if kind is not None and not valid(kind):
            explicit.append(c.get("name", ""))
            values.add(kind)
        elif kind is None and (pod_type is None or not valid(pod_type)):
            missing.append(c.get("name", ""))
    if explicit:
        setters.append(_named("container", explicit))
    if setters:
        setters_text = " and ".join(setters)
        return (
            "seccompProfile",
            f"{setters_text} must not set securityContext.seccompProfile.type to {_quote(sorted(values))}",
        )
    if implicit and missing:
        return (
            "seccompProfile",
            f'pod or {_named("container", missing)} must set securityContext.seccompProfile.type to "RuntimeDefault" '
            'or "Localhost"',
        )
    return None


def seccomp_baseline(spec: Spec) -> Result:
    return _seccomp(spec, lambda kind: kind != "Unconfined", implicit=False)


def seccomp_restricted(spec: Spec) -> Result:
    return _seccomp(spec, lambda kind: kind in ("RuntimeDefault", "Localhost"), implicit=True)


def allow_privilege_escalation(spec: Spec) -> Result:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return (
        "allowPrivilegeEscalation != false",
        f"{_named('container', bad)} must set securityContext.allowPrivilegeEscalation=false",
    )


def capabilities_restricted(spec: Spec) -> Result:
    no_drop, adding, caps = [], [], set()
    for c in _containers(spec):
        capabilities = _sc(c).get("capabilities")
        if capabilities is None:
            no_drop.append(c.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            no_drop.append(c.get("name", ""))
        extra = [cap for cap in capabilities.get("add") or [] if cap != "NET_BIND_SERVICE"]
        if extra:
            adding.append(c.get("name", ""))
            caps.update(extra)
    details = []
    if no_drop:
        details.append(f'{_named("container", no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(
            f"{_named('container', adding)} must not include {_quote(sorted(caps))} in securityContext.capabilities.add"
        )
    return ("unrestricted capabilities", "; ".join(details)) if details else None


def restricted_volumes(spec: Spec) -> Result:
    bad, kinds = [], set()
    for volume in spec.get("volumes") or []:
        sources = [key for key in volume if key != "name"]
        if any(source in RESTRICTED_VOLUME_SOURCES for source in sources):
            continue
        bad.append(volume.get("name", ""))
        kinds.add(sources[0] if sources else "unknown")
    if not bad:
        return None
    uses = _plural("uses", "use", len(bad))
    kind = _plural("restricted volume type", "restricted volume types", len(kinds))
    return "restricted volume types", f"{_named('volume', bad)} {uses} {kind} {_quote(sorted(kinds))}"


def _user_namespace(spec: Spec) -> bool:
    """``relaxPolicyForUserNamespacePod``: ``hostUsers: false`` relaxes runAsNonRoot and runAsUser (1.35)."""
    return spec.get("hostUsers") is False


def run_as_non_root(spec: Spec) -> Result:
    if _user_namespace(spec):
        return None
    setters, pod_ok = [], False
    pod_value = _sc(spec).get("runAsNonRoot")
    if pod_value is False:
        setters.append("pod")
    elif pod_value is True:
        pod_ok = True
    explicit, implicit = [], []
    for c in _containers(spec):
        value = _sc(c).get("runAsNonRoot")
        if value is False:
            explicit.append(c.get("name", ""))
        elif value is None and not pod_ok:
            implicit.append(c.get("name", ""))
    if explicit:
        setters.append(_named("container", explicit))
    if setters:
        return "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
    if implicit:
        return (
            "runAsNonRoot != true",
            f"pod or {_named('container', implicit)} must set securityContext.runAsNonRoot=true",
        )
    return None


def run_as_user(spec: Spec) -> Result:
    if _user_namespace(spec):
        return None
    setters = ["pod"] if _sc(spec).get("runAsUser") == 0 else []
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    if bad:
        setters.append(_named("container", bad))
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


Check = Callable[[Spec], Result]
BASELINE: dict[str, Check] = {
    "capabilities_baseline": capabilities_baseline,
    "hostNamespaces": host_namespaces,
    "hostPathVolumes": host_path_volumes,
    "hostPorts": host_ports,
    "privileged": privileged,
    "seccompProfile_baseline": seccomp_baseline,
}
RESTRICTED: dict[str, Check] = {
    "allowPrivilegeEscalation": allow_privilege_escalation,
    "capabilities_restricted": capabilities_restricted,
    "restrictedVolumes": restricted_volumes,
    "runAsNonRoot": run_as_non_root,
    "runAsUser": run_as_user,
    "seccompProfile_restricted": seccomp_restricted,
}
OVERRIDDEN = frozenset({"capabilities_baseline", "hostPathVolumes", "seccompProfile_baseline"})
"""The baseline checks a restricted check replaces (its ``OverrideCheckIDs``)."""


def checks(level: str) -> list[Check]:
    """The checks of ``level`` in upstream's order: baseline IDs sorted, then restricted IDs sorted."""
    if level == "baseline":
        return [BASELINE[key] for key in sorted(BASELINE)]
    if level == "restricted":
        base = [BASELINE[key] for key in sorted(BASELINE) if key not in OVERRIDDEN]
        return base + [RESTRICTED[key] for key in sorted(RESTRICTED)]
    return []


def forbidden_detail(level: str, spec: Spec) -> str:
    """``AggregateCheckResult.ForbiddenDetail``: ``reason (detail), ...`` of every failed check; empty when none."""
    failed = [r for check in checks(level) if (r := check(spec)) is not None]
    return ", ".join(f"{reason} ({detail})" if detail else reason for reason, detail in failed)


def _policy(labels: dict[str, str], mode: str) -> tuple[str, str]:
    return labels.get(LABEL_PREFIX + mode, "privileged"), labels.get(f"{LABEL_PREFIX}{mode}-version", LATEST)


def admit(pod: Spec, namespace_labels: dict[str, str], warnings: list[str] | None) -> None:
    """Refuse ``pod`` (403 Forbidden) when its namespace's enforced level does; otherwise add the ``warn`` level's
    warning to ``warnings``."""
    name = (pod.get("metadata") or {}).get("name", "")
    spec = pod.get("spec") or {}
    level, version = _policy(namespace_labels, "enforce")
    if detail := forbidden_detail(level, spec):
        message = f'pods "{name}" is forbidden: violates PodSecurity "{level}:{version}": {detail}'
        raise ApiError(403, "Forbidden", message, {"name": name, "kind": "pods"})
    level, version = _policy(namespace_labels, "warn")
    if (detail := forbidden_detail(level, spec)) and warnings is not None:
        warnings.append(f'would violate PodSecurity "{level}:{version}": {detail}')
