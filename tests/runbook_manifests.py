"""Manifests of the onboarding runbook, verbatim, for the tests that apply them to the lab or compare with them."""

from __future__ import annotations

from typing import Any

import yaml

from tenantflow.models.network_policy import NetworkPorts

QUOTA_MANIFEST = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: tenant-foo-quota
  namespace: {ns}
spec:
  hard:
    requests.nvidia.com/gpu: "64"
    requests.cpu: "1024"
    requests.memory: "8Ti"
    limits.memory: "10Ti"
    persistentvolumeclaims: "50"
    requests.storage: "100Ti"
---
apiVersion: v1
kind: LimitRange
metadata:
  name: tenant-foo-defaults
  namespace: {ns}
spec:
  limits:
    - type: Container
      default:
        cpu: "4"
        memory: "16Gi"
      defaultRequest:
        cpu: "1"
        memory: "4Gi"
"""
"""Step 3b's ResourceQuota and LimitRange; format with ``ns``."""

RUNBOOK_POLICIES = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: tenant-foo-deny-all, namespace: tenant-foo}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: tenant-foo-allow, namespace: tenant-foo}
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
  ingress:
    - from:
        - namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: tenant-foo } }
        - namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: slurm-control } }
  egress:
    - to:
        - namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: tenant-foo } }
        - namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: slurm-control } }
        - namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: auth } }
        - namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: kube-system } }
      ports:
        - { port: 53, protocol: UDP }
        - { port: 636, protocol: TCP }
        - { port: 443, protocol: TCP }
"""


def runbook_policies() -> list[dict[str, Any]]:
    """The deny-all and the allow policy, as objects."""
    return list(yaml.safe_load_all(RUNBOOK_POLICIES))


def runbook_allow_policy() -> dict[str, Any]:
    """The allow policy alone."""
    return runbook_policies()[1]


OUTPOST_PORTS = NetworkPorts(ldaps=6636, slurmctld=6817, dns_udp=53, dns_tcp=53, slurmd=6818, srun_range=(60001, 63000))
"""The pod ports of an estate whose LDAP outpost Service maps 636 to 6636 (Authentik's), for tests of the pure
rendering; written out here, not read by the code under test."""
