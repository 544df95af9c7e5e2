"""The lab's stand-in for csi-wekafs (controller and node plugin), the PV binder and the kubelet, on the tenant
cluster, acting on the Weka emulator's state as a real mount would.

* A PVC of a StorageClass with provisioner ``csi.weka.io`` is provisioned like csi-wekafs does for
  ``volumeType: dir/v1``: the provisioner Secret named by ``csi.storage.k8s.io/provisioner-secret-*`` must hold
  ``username``, ``password``, ``organization`` and ``endpoints`` and log in (role CSI, OrgAdmin or ClusterAdmin)
  to the organization owning ``filesystemName``; then a directory ``/csi-volumes/<pv>`` with a hard quota of the
  requested size is made, a PV created and both marked Bound. Otherwise the PVC stays Pending with a Warning
  event ``ProvisioningFailed`` whose message says why, as the external-provisioner reports.
* A PVC naming a static PV (``volumeName``) of driver ``csi.weka.io`` is bound to it.
* A Job whose one container runs :data:`lab.weka.csi_facts.MKDIR_SCRIPT` on a PVC bound to a static
  ``weka/v2/<filesystem>`` PV, mounted where the script ``cd``s, is "run": the PV's ``nodePublishSecretRef`` must
  log in to the organization owning the filesystem (else the mount fails, and so does the Job), then for each
  directory the owner it had (when it existed) is logged as the script's ``stat`` would, and it is made
  (``mkdir -p``) and given its uid, gid and mode, which the Weka stand-in records. As the Job controller and the
  kubelet would, a Pod of the Job (labels ``batch.kubernetes.io/job-name``, ``job-name``, an ownerReference)
  carries that log (served by ``pods/log``) and ends ``Succeeded``; then the Job ends ``Complete``, or (the mount
  failed, no container ran) ``Failed`` with the mount's message. As the garbage collector would, a Job's Pods
  go when the Job is gone. Other Jobs are not touched.
* A Job running :data:`lab.weka.csi_facts.REMOVE_SCRIPT` on such a mount removes each directory that exists
  with all it holds (``rm -rf``: the directories under it and the quotas on their inodes go too) and logs
  ``removed <path>`` for it; the rest is as for the directory Job. The facts (the driver, the Secret's keys, the
  volume handle) are csi-wekafs's, from its examples (:mod:`lab.weka.csi_facts`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
from collections.abc import Callable
from typing import Any

from tenantflow.lab.changes import RESYNC_MAX_S
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers.hub import reconcile_on_events
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.lab.kubeapi.podexec import LOG_ANNOTATION
from tenantflow.lab.kubeapi.store import Store, now
from tenantflow.lab.weka.csi_facts import (
    DRIVER,
    REQUIRED_SECRET_KEYS,
    Mkdir,
    before_line,
    handle_filesystem,
    mkdir_run,
    mount_path,
    remove_run,
    removed_line,
)
from tenantflow.lab.weka.service import WekaService
from tenantflow.lab.weka.state import ROLE_CLUSTER_ADMIN, ROLE_CSI, ROLE_ORG_ADMIN, FileSystem, Quota, WekaError

CONTEXT = "tenant-cluster"
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
CSI_ROLES = frozenset({ROLE_CSI, ROLE_ORG_ADMIN, ROLE_CLUSTER_ADMIN})
SIZES = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
}
Obj = dict[str, Any]


class Refused(Exception):
    """What the real driver would answer instead of mounting or provisioning."""


def _bytes(quantity: str) -> int:
    for suffix, factor in SIZES.items():
        if quantity.endswith(suffix):
            return int(float(quantity.removesuffix(suffix)) * factor)
    return int(float(quantity))


MountRun = tuple[str, list[Mkdir] | None, list[str] | None]
"""(mount path, directories made or None, paths removed or None) of a helper's run."""


def _mount_run(pod: Obj) -> MountRun | None:
    """What a pod spec's one container does on its mount when it runs one of the scripts the stand-in can run
    (:mod:`lab.weka.csi_facts`); None for other pods."""
    containers = pod.get("containers") or []
    command = [str(arg) for arg in (containers[0].get("command") or [])] if len(containers) == 1 else []
    made, removals, where = mkdir_run(command), remove_run(command), mount_path(command)
    return None if where is None or (made is None and removals is None) else (where, made, removals)


def _run(fs: FileSystem, made: list[Mkdir] | None, removals: list[str] | None) -> tuple[list[str], str]:
    """Run the script on ``fs``: its log lines and what it did, in words."""
    if removals is not None:
        removed = [path for path in removals if fs.remove_tree(path)]
        return [removed_line(path) for path in removed], f"removed {len(removed)} directories from {fs.name}"
    log = []
    for path, uid, gid, mode in made or []:
        if path in fs.directories:
            before = fs.owner_of(path)
            log.append(before_line(path, before.uid, before.gid, before.mode))
        fs.mkdir(path)
        fs.set_owner(path, uid, gid, mode)
    return log, f"made {len(made or [])} directories on {fs.name}"


class CsiWekafs:
    def __init__(self, store: Store, weka: WekaService, changed: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.weka = weka
        self.changed = changed
        """Called after each change this stand-in makes to Weka's state (a directory made, owned or removed)."""

    # -- the API Secret and the filesystem it may reach ------------------------------------------

    def _secret(self, name: str | None, namespace: str | None) -> dict[str, str]:
        if not name or not namespace:
            raise Refused("no API secret is referenced (csi.storage.k8s.io/*-secret-name/namespace)")
        try:
            secret = self.store.get("", "secrets", name, namespace)
        except ApiError:
            raise Refused(f"secret {namespace}/{name} not found") from None
        try:
            data = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
        except (binascii.Error, UnicodeDecodeError):
            raise Refused(f"secret {namespace}/{name} holds data that is not base64 text") from None
        missing = [key for key in REQUIRED_SECRET_KEYS if not data.get(key)]
        if missing:
            raise Refused(
                f"secret {namespace}/{name} lacks {', '.join(missing)}: failed to initialize the Weka API client"
            )
        return data

    def _filesystem(self, secret: dict[str, str], fs_name: str) -> FileSystem:
        cluster = self.weka.cluster
        user = cluster.user_by_login(secret["organization"], secret["username"], secret["password"])
        if user is None:
            raise Refused(
                f"failed to log in to the Weka API as {secret['username']} in organization "
                f"{secret['organization']}: Username or password are incorrect"
            )
        if user.role not in CSI_ROLES:
            raise Refused(
                f"user {user.username} has role {user.role}; the CSI plugin needs CSI, OrgAdmin or ClusterAdmin"
            )
        fs = next((f for f in cluster.filesystems.values() if f.name == fs_name and f.org_id == user.org_id), None)
        if fs is None:
            raise Refused(f"filesystem {fs_name} not found in organization {secret['organization']}")
        return fs

    # -- PVCs --------------------------------------------------------------------------------------

    def _event(self, pvc: Obj, reason: str, message: str) -> None:
        meta = pvc["metadata"]
        name = f"{meta['name']}.{hashlib.sha256(message.encode()).hexdigest()[:10]}"
        try:
            self.store.get("", "events", name, meta["namespace"])
            return
        except ApiError:
            pass
        self.store.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "type": "Warning",
                "reason": reason,
                "message": message,
                "metadata": {"name": name, "namespace": meta["namespace"]},
                "involvedObject": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "uid": meta.get("uid", ""),
                },
                "source": {"component": f"{DRIVER}_csi-wekafs-controller"},
                "count": 1,
                "firstTimestamp": now(),
                "lastTimestamp": now(),
            }
        )

    def _bind(self, pvc: Obj, pv: Obj) -> None:
        self.store.update_status({**pv, "status": {"phase": "Bound"}})
        if pvc["spec"].get("volumeName") != pv["metadata"]["name"]:
            meta = pvc["metadata"]
            pvc = self.store.patch(
                "",
                "persistentvolumeclaims",
                meta["name"],
                {"spec": {"volumeName": pv["metadata"]["name"]}},
                MERGE_PATCH,
                meta["namespace"],
            )
        self.store.update_status(
            {
                **pvc,
                "status": {
                    "phase": "Bound",
                    "accessModes": pvc["spec"]["accessModes"],
                    "capacity": pv["spec"]["capacity"],
                },
            }
        )

    def _provision(self, pvc: Obj, sc: Obj) -> None:
        params = sc.get("parameters") or {}
        if params.get("volumeType", "dir/v1") != "dir/v1" or not params.get("filesystemName"):
            raise Refused("the stand-in provisions only volumeType dir/v1 with a filesystemName")
        secret = self._secret(
            params.get("csi.storage.k8s.io/provisioner-secret-name"),
            params.get("csi.storage.k8s.io/provisioner-secret-namespace"),
        )
        fs = self._filesystem(secret, params["filesystemName"])
        name = f"pvc-{pvc['metadata']['uid']}"
        size = str(pvc["spec"]["resources"]["requests"]["storage"])
        inode = fs.mkdir(f"/csi-volumes/{name}")
        self.changed()
        fs.quotas[inode] = Quota(
            inode_id=inode,
            path=f"/csi-volumes/{name}",
            hard_limit_bytes=_bytes(size),
            soft_limit_bytes=_bytes(size),
            grace_seconds=0,
        )
        pv = self.store.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER}},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": pvc["spec"]["accessModes"],
                    "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy", "Delete"),
                    "storageClassName": sc["metadata"]["name"],
                    "volumeMode": "Filesystem",
                    "claimRef": {
                        "namespace": pvc["metadata"]["namespace"],
                        "name": pvc["metadata"]["name"],
                        "uid": pvc["metadata"]["uid"],
                    },
                    "csi": {"driver": DRIVER, "volumeHandle": f"dir/v1/{fs.name}/csi-volumes/{name}"},
                },
            }
        )
        self._bind(pvc, pv)

    def reconcile_pvc(self, pvc: Obj) -> None:
        if (pvc.get("status") or {}).get("phase") == "Bound" or pvc["metadata"].get("deletionTimestamp"):
            return
        spec = pvc["spec"]
        if spec.get("volumeName"):
            try:
                pv = self.store.get("", "persistentvolumes", spec["volumeName"])
            except ApiError:
                return
            if (pv["spec"].get("csi") or {}).get("driver") == DRIVER:
                self._bind(pvc, pv)
            return
        try:
            sc = self.store.get("storage.k8s.io", "storageclasses", spec.get("storageClassName") or "")
        except ApiError:
            return
        if sc.get("provisioner") != DRIVER:
            return
        try:
            self._provision(pvc, sc)
        except (Refused, WekaError) as exc:
            message = exc.message if isinstance(exc, WekaError) else str(exc)
            self._event(
                pvc,
                "ProvisioningFailed",
                f"failed to provision volume with StorageClass "
                f'"{sc["metadata"]["name"]}": rpc error: code = Internal desc = {message}',
            )

    # -- the directory helper Job ------------------------------------------------------------------

    def _mounted_filesystem(self, namespace: str, claim: str) -> FileSystem | None:
        """The filesystem a Bound claim mounts, or None while it is not bound yet."""
        try:
            pvc = self.store.get("", "persistentvolumeclaims", claim, namespace)
        except ApiError:
            raise Refused(f'persistentvolumeclaim "{claim}" not found') from None
        if (pvc.get("status") or {}).get("phase") != "Bound":
            return None
        csi = self.store.get("", "persistentvolumes", pvc["spec"]["volumeName"])["spec"].get("csi") or {}
        fs_name = handle_filesystem(str(csi.get("volumeHandle", "")))
        if csi.get("driver") != DRIVER or fs_name is None:
            raise Refused(f"the volume of {claim} is not a whole Weka filesystem (weka/v2/<filesystem>)")
        ref = csi.get("nodePublishSecretRef") or {}
        return self._filesystem(self._secret(ref.get("name"), ref.get("namespace")), fs_name)

    def _finish(self, job: Obj, kind: str, message: str) -> None:
        status = {
            "conditions": [
                {
                    "type": kind,
                    "status": "True",
                    "reason": kind if kind == "Complete" else "PodFailed",
                    "message": message,
                    "lastTransitionTime": now(),
                }
            ],
            "startTime": now(),
            ("succeeded" if kind == "Complete" else "failed"): 1,
        }
        self.store.update_status({**job, "status": status})

    def _pod(self, job: Obj, log: str) -> None:
        """The Job's one Pod, as the Job controller makes it and the kubelet leaves it, its log in the annotation
        the lab's ``pods/log`` serves."""
        meta = job["metadata"]
        template = job["spec"]["template"]
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            **dict.fromkeys(JOB_NAME_LABELS, meta["name"]),
            **dict.fromkeys(CONTROLLER_UID_LABELS, meta["uid"]),
        }
        pod = self.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{meta['name']}-{hashlib.sha256(meta['uid'].encode()).hexdigest()[:5]}",
                    "namespace": meta["namespace"],
                    "labels": labels,
                    "annotations": {LOG_ANNOTATION: log},
                    "ownerReferences": [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": template["spec"],
            }
        )
        self.store.update_status({**pod, "status": {"phase": "Succeeded"}})

    def _collect_pods(self) -> None:
        """The garbage collector, for the Pods this stand-in made: one whose owning Job (by uid) is gone goes too."""
        jobs = {j["metadata"]["uid"] for j in self.store.list("batch", "jobs")}
        for pod in self.store.list("", "pods"):
            owners = [r for r in pod["metadata"].get("ownerReferences") or [] if r.get("kind") == "Job"]
            if owners and _mount_run(pod["spec"]) is not None and not any(r.get("uid") in jobs for r in owners):
                with contextlib.suppress(ApiError):
                    self.store.delete("", "pods", pod["metadata"]["name"], pod["metadata"]["namespace"])

    def reconcile_job(self, job: Obj) -> None:
        if (job.get("status") or {}).get("conditions"):
            return
        pod = job["spec"]["template"]["spec"]
        containers = pod.get("containers") or []
        run = _mount_run(pod)
        if run is None:
            return
        where, made, removals = run
        claims = {
            v["name"]: v["persistentVolumeClaim"]["claimName"]
            for v in pod.get("volumes") or []
            if v.get("persistentVolumeClaim")
        }
        mounts = [m for m in containers[0].get("volumeMounts") or [] if m.get("mountPath") == where]
        try:
            if len(mounts) != 1 or mounts[0]["name"] not in claims:
                raise Refused(f"{where} is not a mounted volume: sh: cd: can't cd to {where}")
            fs = self._mounted_filesystem(job["metadata"]["namespace"], claims[mounts[0]["name"]])
            if fs is None:
                return
            try:
                log, done = _run(fs, made, removals)
            finally:
                self.changed()  # a run that failed half-way may have made or removed some
        except (Refused, WekaError) as exc:
            message = exc.message if isinstance(exc, WekaError) else str(exc)
            self._finish(job, "Failed", f'MountVolume.SetUp failed for volume "weka": {message}')
            return
        self._pod(job, "".join(f"{line}\n" for line in log))
        self._finish(job, "Complete", done)

    def reconcile(self) -> None:
        for pvc in self.store.list("", "persistentvolumeclaims"):
            self.reconcile_pvc(pvc)
        for job in self.store.list("batch", "jobs"):
            self.reconcile_job(job)
        self._collect_pods()


async def run(ctx: LabContext) -> None:
    store = ctx.stores.get(CONTEXT)
    if store is None or ctx.weka is None:
        return
    # Weka's state changes by its API, not by events of the store: ctx.changes counts those writes too
    await reconcile_on_events(
        [store], CsiWekafs(store, ctx.weka, ctx.storage.bump).reconcile, changes=ctx.changes, idle_max_s=RESYNC_MAX_S
    )
