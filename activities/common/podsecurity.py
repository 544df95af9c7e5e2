"""The Pod Security Standards' ``baseline`` and ``restricted`` checks of a pod spec, statically (pure): the login
plan shows with them whether the level tenant namespaces enforce admits the login pod, and ``tenantflow doctor``
checks the login pods and the Weka directory Job's pod.

From the standards (https://kubernetes.io/docs/concepts/security/pod-security-standards/), with the wording of
pod-security-admission's refusals (``violates PodSecurity "restricted:latest": <check> (<detail>), ...``):
baseline forbids host namespaces, privileged containers, capabilities beyond the default set, hostPath volumes
and host ports; restricted adds the volume-type allow list, ``allowPrivilegeEscalation=false``,
``runAsNonRoot=true``, no ``runAsUser=0``, a ``RuntimeDefault``/``Localhost`` seccomp profile, and capabilities
dropped to ``ALL`` (only ``NET_BIND_SERVICE`` added back).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

LEVELS = ("privileged", "baseline", "restricted")
BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP"}
    | {"SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
SECCOMP_ALLOWED = frozenset({"RuntimeDefault", "Localhost"})
Spec = dict[str, Any]


def _containers(spec: Spec) -> Iterator[Spec]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _ctx(obj: Spec) -> Spec:
    return obj.get("securityContext") or {}


def baseline(spec: Spec) -> list[str]:
    """The baseline checks ``spec`` fails, each as pod-security-admission words it."""
    found = [f"host namespaces ({key}=true)" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    for c in _containers(spec):
        name, sc = c.get("name", ""), _ctx(c)
        if sc.get("privileged"):
            found.append(f'privileged (container "{name}" must not set securityContext.privileged=true)')
        extra = sorted(set((sc.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES)
        if extra:
            found.append(f'non-default capabilities (container "{name}" must not include {extra} in capabilities.add)')
        ports = [p["hostPort"] for p in c.get("ports") or [] if p.get("hostPort")]
        if ports:
            found.append(f'hostPort (container "{name}" uses hostPort {", ".join(map(str, ports))})')
    found += [f'hostPath volumes (volume "{v.get("name")}")' for v in spec.get("volumes") or [] if "hostPath" in v]
    return found


def restricted(spec: Spec) -> list[str]:
    """The restricted checks ``spec`` fails (baseline's included)."""
    found = baseline(spec)
    pod = _ctx(spec)
    for volume in spec.get("volumes") or []:
        kinds = [k for k in volume if k != "name" and k not in RESTRICTED_VOLUMES]
        if kinds and "hostPath" not in kinds:
            found.append(f'restricted volume types (volume "{volume.get("name")}" uses {kinds[0]})')
    pod_seccomp = (pod.get("seccompProfile") or {}).get("type")
    for c in _containers(spec):
        name, sc = c.get("name", ""), _ctx(c)
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f'allowPrivilegeEscalation != false (container "{name}" must set it to false)')
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f'unrestricted capabilities (container "{name}" must drop ["ALL"], add only NET_BIND_SERVICE)')
        if not sc.get("runAsNonRoot", pod.get("runAsNonRoot")):
            found.append(f'runAsNonRoot != true (pod or container "{name}" must set securityContext.runAsNonRoot=true)')
        if sc.get("runAsUser", pod.get("runAsUser")) == 0:
            found.append(f'runAsUser=0 (pod or container "{name}" must not run as user 0)')
        if (sc.get("seccompProfile") or {}).get("type", pod_seccomp) not in SECCOMP_ALLOWED:
            found.append(f'seccompProfile (pod or container "{name}" must set type RuntimeDefault or Localhost)')
    return found


def violations(level: str, spec: Spec) -> list[str]:
    """What a namespace enforcing ``level`` refuses in ``spec`` (nothing for ``privileged``)."""
    if level == "restricted":
        return restricted(spec)
    return baseline(spec) if level == "baseline" else []
