"""Which resource types an emulated cluster serves: built-in kinds and CRD-registered kinds.

A :class:`ResourceType` is addressed version-independently by ``(group, plural)``; it
knows its kind, scope, served versions, short names, subresources and, for custom
resources, the OpenAPI v3 schema of each version. :class:`Registry` resolves the
``apiVersion``/``kind`` of an object or the ``group``/``version``/``plural`` of a URL
to a type, and :func:`resource_type_from_crd` turns a CustomResourceDefinition into
one so discovery and CRUD of its custom resources work as soon as it is created.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tenantflow.lab.kubeapi.errors import ApiError, not_found


@dataclass(frozen=True)
class ResourceType:
    """One served resource (like ``pods`` or ``reservations.scheduling.example.io``)."""

    group: str
    versions: tuple[str, ...]
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    categories: tuple[str, ...] = ()
    custom: bool = False
    delete_returns_object: bool = False
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        v = version or self.storage_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def all_subresources(self) -> tuple[str, ...]:
        return (("status",) if self.status_subresource else ()) + self.subresources


NO_COLLECTION = ("create", "delete", "get", "list", "patch", "update", "watch")


def _rt(
    group: str, kind: str, plural: str, namespaced: bool, short: tuple[str, ...] = (), status: bool = False, **kw: Any
) -> ResourceType:
    return ResourceType(
        group=group,
        versions=(kw.pop("version", "v1"),),
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=short,
        status_subresource=status,
        **kw,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _rt("", "Namespace", "namespaces", False, ("ns",), True, verbs=NO_COLLECTION, delete_returns_object=True),
    _rt("", "Node", "nodes", False, ("no",), True),
    _rt(
        "",
        "Pod",
        "pods",
        True,
        ("po",),
        True,
        subresources=("exec", "log"),
        categories=("all",),
        delete_returns_object=True,
    ),
    _rt(
        "",
        "Service",
        "services",
        True,
        ("svc",),
        True,
        verbs=NO_COLLECTION,
        categories=("all",),
        delete_returns_object=True,
    ),
    _rt("", "Secret", "secrets", True),
    _rt("", "ConfigMap", "configmaps", True, ("cm",)),
    _rt("", "ServiceAccount", "serviceaccounts", True, ("sa",), delete_returns_object=True),
    _rt("", "PersistentVolume", "persistentvolumes", False, ("pv",), True, delete_returns_object=True),
    _rt("", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), True, delete_returns_object=True),
    _rt("", "ResourceQuota", "resourcequotas", True, ("quota",), True, delete_returns_object=True),
    _rt("", "LimitRange", "limitranges", True, ("limits",)),
    _rt("", "Event", "events", True, ("ev",)),
    _rt("apps", "Deployment", "deployments", True, ("deploy",), True, categories=("all",)),
    _rt("apps", "StatefulSet", "statefulsets", True, ("sts",), True, categories=("all",)),
    _rt("batch", "Job", "jobs", True, (), True, categories=("all",)),
    _rt("rbac.authorization.k8s.io", "Role", "roles", True),
    _rt("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", True),
    _rt("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", False),
    _rt("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", False),
    _rt("networking.k8s.io", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    _rt("coordination.k8s.io", "Lease", "leases", True),
    _rt("policy", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), True),
    _rt("storage.k8s.io", "StorageClass", "storageclasses", False, ("sc",), delete_returns_object=True),
    _rt("storage.k8s.io", "CSIDriver", "csidrivers", False, (), delete_returns_object=True),
    _rt("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False, verbs=("create",)),
    _rt("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", False, ("crd", "crds"), True),
)


def resource_type_from_crd(crd: dict[str, Any]) -> ResourceType:
    """Build the type a CRD declares; served versions first the storage version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    versions.sort(key=lambda v: not v.get("storage", False))
    status = any("status" in (v.get("subresources") or {}) for v in versions)
    schemas = {v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {} for v in versions}
    return ResourceType(
        group=spec["group"],
        versions=tuple(v["name"] for v in versions),
        kind=names["kind"],
        plural=names["plural"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        singular=names.get("singular") or names["kind"].lower(),
        short_names=tuple(names.get("shortNames") or ()),
        status_subresource=status,
        categories=tuple(names.get("categories") or ()),
        custom=True,
        delete_returns_object=True,
        schemas=schemas,
    )


class Registry:
    """The mutable set of served types; not locked itself (the store guards it)."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str], ResourceType] = {t.key: t for t in BUILTIN_TYPES}

    def add(self, rt: ResourceType) -> None:
        self._types[rt.key] = rt

    def remove(self, key: tuple[str, str]) -> None:
        self._types.pop(key, None)

    def types(self) -> list[ResourceType]:
        return list(self._types.values())

    def get(self, group: str, plural: str) -> ResourceType | None:
        return self._types.get((group, plural))

    def lookup(self, group: str, version: str, plural: str) -> ResourceType:
        """The type served at ``/apis/{group}/{version}/{plural}``; 404 otherwise."""
        rt = self._types.get((group, plural))
        if rt is None or version not in rt.versions:
            raise ApiError(
                404, "NotFound", "the server could not find the requested resource", {"group": group, "kind": plural}
            )
        return rt

    def for_object(self, obj: dict[str, Any]) -> ResourceType:
        """The type of a manifest, from its ``apiVersion`` and ``kind``."""
        api_version = obj.get("apiVersion") or ""
        kind = obj.get("kind") or ""
        group, _, version = api_version.rpartition("/")
        for rt in self._types.values():
            if rt.group == group and rt.kind == kind and version in rt.versions:
                return rt
        raise not_found("kind", group, f"{api_version} {kind}")

    def group_versions(self) -> dict[str, list[str]]:
        """Every served group (``""`` is core) with its versions, preferred first."""
        out: dict[str, list[str]] = {}
        for rt in self._types.values():
            for v in rt.versions:
                if v not in out.setdefault(rt.group, []):
                    out[rt.group].append(v)
        return out
