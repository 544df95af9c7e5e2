"""The lab's stand-in for Flux's helm-controller and the ``sunk-login`` chart: HelmRelease ``login-*`` -> login pods.

A ``helm.toolkit.fluxcd.io/v2`` HelmRelease (fluxcd/helm-controller ``api/v2``) named ``login-<slug>`` is
"installed" as the chart would render it: pods ``login-<slug>-0..replicas-1`` (a StatefulSet's names; labelled
``app=login``, Helm's ``app.kubernetes.io/instance=<release>`` and ``app.kubernetes.io/managed-by=<values.tenant>``),
whose ``sshd`` container carries the values' ``securityContext`` (and the pod the values' ``podSecurityContext``),
created through the API server's admission like any pod (Pod Security Admission, :mod:`lab.kubeapi.podsecurity`),
then marked Running and Ready as a kubelet would; and a LoadBalancer Service carrying the values' annotations.
The release's status then reads as helm-controller writes it (``internal/reconcile/install.go``): conditions
``Ready`` and ``Released`` True with reason ``InstallSucceeded`` and ``Helm install succeeded for release
<ns>/<name>.v1 with chart <chart>@<version>``; when a pod is refused, both False with reason ``InstallFailed`` and
``Helm install failed for release <ns>/<name> with chart <chart>@<version>: <the API server's refusal>``, and a
Warning Event ``InstallFailed`` on the release. (Real helm-controller reaches that failure only after Helm's wait
times out, the refusal being in the StatefulSet's ``FailedCreate`` events; the stand-in reports it at once.) A
release is reconciled when its generation moves past ``status.observedGeneration`` (not on its own status writes)
or its namespace's labels change (as Flux retries on its interval). When
the release goes, so do its pods and Service.

The exec handler is a documented stand-in for the login pod's userland, answering only:

* ``getent passwd <user> [<user> ...]`` / ``getent group <name>`` from the real slapd (what nslcd does),
  formatted like getent; exit 2 when a key is not found (and for every lookup while the
  ``outpost_throttled`` pitfall has the outpost answer busy);
* ``ls /etc/ssh/authorized_keys.d/`` and ``cat /etc/ssh/authorized_keys.d/<user>`` from the
  release's ``sshKeysSecret`` (what the projected volume shows);
* ``sinfo ...`` run on the host under ``ctx.slurm_env`` (the real Slurm), in the Slurm pods' view of the users (the
  mount namespace where the lab's outpost users resolve, as nslcd resolves them on a login pod); exit 1 without it;
* ``srun ...``, an interactive job, run the same way once the NetworkPolicies let each of its connections through
  (slurm.conf(5), ``SlurmdPort`` and ``SrunPortRange``): to slurmctld, to slurmd's pods on their port 6818, and
  slurmd's connections back to srun on every port of the lab's ``SrunPortRange``.

``getent``, ``sinfo`` and ``srun`` fail as nslcd and Slurm would when the namespaces' NetworkPolicies drop a
connection (:mod:`lab.kubeapi.netpolicy`), with the client's own words: srun's from SchedMD/slurm's source, since
the stand-in refuses before any allocation it names the slurmd pods by selector, not a step and node:
``Task launch for %ps failed on node %s: %m`` (``src/api/step_launch.c``) with
``SLURM_COMMUNICATIONS_CONNECTION_ERROR``'s text "Communication connection failure" (``src/common/slurm_errno.c``)
when slurmd cannot be reached; slurmstepd's ``connect io: %m`` (``src/slurmd/slurmstepd/io.c``, here "Connection
timed out") and srun's ``timeout waiting for task launch, started 0 of N tasks`` then ``Job step aborted``
(``src/api/step_launch.c``) when slurmd cannot connect back.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
from typing import Any

from ldap3 import SUBTREE
from ldap3.utils.conv import escape_filter_chars

from tenantflow.lab import pitfalls
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers.login_chart import (
    GROUP,
    INSTANCE_LABEL,
    KEYS_DIR,
    Obj,
    conditions_of,
    pod,
    same,
    service,
    values,
)
from tenantflow.lab.controllers.slurm import in_pod_view
from tenantflow.lab.daemons import ldap_tree
from tenantflow.lab.daemons.slurm import SRUN_PORT_RANGE
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.lab.kubeapi.netpolicy import LDAP_OUTPOST, SLURMCTLD, SLURMD, callback_blocked, probe_blocked
from tenantflow.lab.kubeapi.store import ObjectKey, Store, now

CONTEXT = "tenant-cluster"
PREFIX = "login-"

ExecReply = tuple[str, str, int]


def observed(release: Obj) -> object:
    """``status.observedGeneration``: helm-controller reconciles a release when its generation moves past it (its
    watch predicate), not when only its status changes."""
    return (release.get("status") or {}).get("observedGeneration")


class LoginReleases:
    """Keeps the login pods and Service of every ``login-*`` HelmRelease."""

    def __init__(self, ctx: LabContext) -> None:
        self.ctx = ctx
        self.store: Store = ctx.stores[CONTEXT]

    def reconcile(self, release: Obj) -> None:
        ns, name = release["metadata"]["namespace"], release["metadata"]["name"]
        replicas = int(values(release).get("replicas", 1))
        wanted = {pod(release, i)["metadata"]["name"]: pod(release, i) for i in range(replicas)}
        # the pods' userland answers before any of them is Ready: a client that sees a Ready pod may exec at once
        self.ctx.register_exec(CONTEXT, ns, f"{name}-", self.exec)
        for present in self.store.list("", "pods", ns, label_selector=f"{INSTANCE_LABEL}={name}"):
            if present["metadata"]["name"] not in wanted:
                self.store.delete("", "pods", present["metadata"]["name"], ns)
        refused = None
        for pod_name, rendered in wanted.items():
            if self._exists("", "pods", pod_name, ns):
                continue
            try:
                self.store.create(rendered)
            except ApiError as err:
                if err.code != 403:
                    raise
                refused = err.message
                break
            self.store.patch(
                "",
                "pods",
                pod_name,
                {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                MERGE_PATCH,
                namespace=ns,
                subresource="status",
            )
        if not self._exists("", "services", name, ns):
            self.store.create(service(release))
        conditions = conditions_of(release, refused)
        if refused is not None:
            self._event(release, conditions[0]["message"])
        if not same((release.get("status") or {}).get("conditions") or [], conditions):
            status = {"observedGeneration": release["metadata"].get("generation", 1), "conditions": conditions}
            self.store.patch(
                GROUP, "helmreleases", name, {"status": status}, MERGE_PATCH, namespace=ns, subresource="status"
            )

    def reconcile_namespace(self, namespace: str) -> None:
        """Every login release of ``namespace`` again (its pod-security labels may have changed)."""
        for release in self.store.list(GROUP, "helmreleases", namespace):
            if release["metadata"]["name"].startswith(PREFIX) and not release["metadata"].get("deletionTimestamp"):
                self.reconcile(release)

    def _event(self, release: Obj, message: str) -> None:
        """A Warning Event ``InstallFailed`` on the release, as helm-controller records one (once per message)."""
        meta = release["metadata"]
        name = f"{meta['name']}.{hashlib.sha256(message.encode()).hexdigest()[:10]}"
        if self._exists("", "events", name, meta["namespace"]):
            return
        self.store.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "type": "Warning",
                "reason": "InstallFailed",
                "message": message,
                "metadata": {"name": name, "namespace": meta["namespace"]},
                "involvedObject": {
                    "apiVersion": f"{GROUP}/v2",
                    "kind": "HelmRelease",
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "uid": meta.get("uid", ""),
                },
                "source": {"component": "helm-controller"},
                "count": 1,
                "firstTimestamp": now(),
                "lastTimestamp": now(),
            }
        )

    def remove(self, release: Obj) -> None:
        name, ns = release["metadata"]["name"], release["metadata"]["namespace"]
        for present in self.store.list("", "pods", ns, label_selector=f"{INSTANCE_LABEL}={name}"):
            self._delete("", "pods", present["metadata"]["name"], ns)
        self._delete("", "services", name, ns)

    def _exists(self, group: str, resource: str, name: str, ns: str) -> bool:
        try:
            self.store.get(group, resource, name, ns)
        except ApiError:
            return False
        return True

    def _delete(self, group: str, resource: str, name: str, ns: str) -> None:
        with contextlib.suppress(ApiError):
            self.store.delete(group, resource, name, ns)

    def _release_for(self, namespace: str, pod: str) -> Obj | None:
        """The release whose chart made ``pod`` (Helm's instance label names it)."""
        try:
            labels = self.store.get("", "pods", pod, namespace)["metadata"].get("labels") or {}
            return self.store.get(GROUP, "helmreleases", str(labels.get(INSTANCE_LABEL, "")), namespace)
        except ApiError:
            return None

    async def exec(self, namespace: str, pod: str, container: str | None, argv: list[str], stdin: bytes) -> ExecReply:
        release = self._release_for(namespace, pod)
        if release is None:
            return "", f'pods "{pod}" not found\n', 1
        chart_values = values(release)
        match argv:
            case ["getent", *_] if blocked := probe_blocked(self.store, namespace, pod, LDAP_OUTPOST):
                return "", f"nslcd: failed to bind to LDAP server: Can't contact LDAP server ({blocked})\n", 2
            case ["sinfo" | "srun" as client, *_] if blocked := probe_blocked(self.store, namespace, pod, SLURMCTLD):
                doing = "Unable to allocate resources: " if client == "srun" else ""
                return (
                    "",
                    f"{client}: error: {doing}Unable to contact slurm controller (connect failure; {blocked})\n",
                    1,
                )
            case ["srun", *_] if refused := self._srun_blocked(namespace, pod):
                return "", refused, 1
            case ["getent", "passwd", *users] if users:
                return await asyncio.to_thread(self._getent_passwd, users)
            case ["getent", "group", name]:
                return await asyncio.to_thread(self._getent_group, name)
            case ["ls", path] if path.rstrip("/") == KEYS_DIR:
                keys = self._synced_keys(namespace, str(chart_values.get("sshKeysSecret", "")))
                return "".join(f"{user}\n" for user in sorted(keys)), "", 0
            case ["cat", path] if path.startswith(KEYS_DIR + "/"):
                keys = self._synced_keys(namespace, str(chart_values.get("sshKeysSecret", "")))
                user = path.removeprefix(KEYS_DIR + "/")
                if user not in keys:
                    return "", f"cat: {path}: No such file or directory\n", 1
                return keys[user], "", 0
            case ["sinfo" | "srun", *_]:
                return await self._slurm_client(argv)
        return "", f"{argv[0] if argv else 'sh'}: command not found (lab login pod stand-in)\n", 127

    def _synced_keys(self, namespace: str, secret: str) -> dict[str, str]:
        """The projected keys; none while the ``keys_empty`` pitfall says the ssh_keys sync has not run."""
        if pitfalls.is_on(self.ctx.state_dir, pitfalls.Pitfall.keys_empty):
            return {}
        return self._keys(namespace, secret)

    def _keys(self, namespace: str, secret: str) -> dict[str, str]:
        try:
            data = self.store.get("", "secrets", secret, namespace).get("data") or {}
        except ApiError:
            return {}
        return {key: base64.b64decode(value).decode() for key, value in data.items()}

    def _search(self, base: str, query: str, attributes: list[str]) -> list[Any]:
        if not self.ctx.ldap_url:
            raise ConnectionError("no LDAP outpost configured in the lab")
        if pitfalls.is_on(self.ctx.state_dir, pitfalls.Pitfall.outpost_throttled):
            raise ConnectionError("LDAP server busy (51): the outpost is rate-limiting lookups")
        with ldap_tree.connect(self.ctx.ldap_url, self.ctx.ldap_bind_dn, self.ctx.ldap_bind_password) as conn:
            conn.search(base, query, search_scope=SUBTREE, attributes=attributes)
            return list(conn.entries)

    def _getent_passwd(self, users: list[str]) -> ExecReply:
        """getent(1) with several keys: a line for each key found, in the keys' order; exit 2 when one or more
        was not found."""
        try:
            wanted = "".join(f"(uid={escape_filter_chars(user)})" for user in users)
            query = f"(&(objectClass=posixAccount)(|{wanted}))"
            entries = self._search(
                ldap_tree.USERS_DN, query, ["uid", "uidNumber", "gidNumber", "displayName", "homeDirectory"]
            )
        except Exception as exc:  # nslcd reports any LDAP failure as "not found" plus a log line
            return "", f"nslcd: {exc}\n", 2
        lines = {
            str(e.uid.value): f"{e.uid.value}:x:{e.uidNumber.value}:{e.gidNumber.value}:{e.displayName.value or ''}:"
            f"{e.homeDirectory.value}:/bin/bash\n"
            for e in entries
        }
        found = "".join(lines[user] for user in users if user in lines)
        return found, "", 0 if all(user in lines for user in users) else 2

    def _getent_group(self, name: str) -> ExecReply:
        try:
            query = f"(&(objectClass=posixGroup)(cn={escape_filter_chars(name)}))"
            entries = self._search(ldap_tree.BASE_DN, query, ["cn", "gidNumber", "member"])
        except Exception as exc:
            return "", f"nslcd: {exc}\n", 2
        if not entries:
            return "", "", 2
        e = entries[0]
        members = [str(dn).split(",", 1)[0].split("=", 1)[1] for dn in e.member.values]
        return f"{e.cn.value}:*:{e.gidNumber.value}:{','.join(members)}\n", "", 0

    def _srun_blocked(self, namespace: str, pod: str) -> str | None:
        """What srun prints when the policies drop its connection to slurmd or slurmd's back to it; None if neither."""
        if blocked := probe_blocked(self.store, namespace, pod, SLURMD):
            return (
                f"srun: error: Task launch for StepId=(none yet) failed on node {SLURMD.name}: "
                f"Communication connection failure ({blocked})\n"
            )
        low, high = SRUN_PORT_RANGE
        if blocked := callback_blocked(self.store, namespace, pod, SLURMD, range(low, high + 1)):
            return (
                f"slurmstepd: error: connect io: Connection timed out ({blocked})\n"
                "srun: error: timeout waiting for task launch, started 0 of 1 tasks\n"
                "srun: Job step aborted\n"
            )
        return None

    async def _slurm_client(self, argv: list[str]) -> ExecReply:
        if not self.ctx.slurm_env:
            return "", f"{argv[0]}: error: Slurm is not running in this lab (no SLURM_CONF)\n", 1
        proc = await asyncio.create_subprocess_exec(
            *in_pod_view(self.ctx.state_dir, argv),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **self.ctx.slurm_env},
        )
        out, err = await proc.communicate()
        return out.decode(), err.decode(), proc.returncode or 0


async def run(ctx: LabContext) -> None:
    """Follow HelmRelease events on the tenant cluster."""
    store = ctx.stores[CONTEXT]
    releases = LoginReleases(ctx)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Obj]] = asyncio.Queue()

    def on_event(event_type: str, key: ObjectKey, obj: Obj) -> None:
        if (key.group, key.resource) == (GROUP, "helmreleases") and key.name.startswith(PREFIX):
            loop.call_soon_threadsafe(queue.put_nowait, (event_type, obj))
        elif (key.group, key.resource) == ("", "namespaces") and event_type == "MODIFIED":
            loop.call_soon_threadsafe(queue.put_nowait, ("NAMESPACE", obj))

    unsubscribe = store.subscribe(on_event, replay=True)
    try:
        while True:
            event_type, obj = await queue.get()
            try:
                if event_type == "NAMESPACE":
                    releases.reconcile_namespace(obj["metadata"]["name"])
                elif event_type == "DELETED":
                    releases.remove(obj)
                elif not obj["metadata"].get("deletionTimestamp"):
                    current = store.get(GROUP, "helmreleases", obj["metadata"]["name"], obj["metadata"]["namespace"])
                    if observed(current) != current["metadata"].get("generation"):
                        releases.reconcile(current)
            except ApiError:
                continue
    finally:
        unsubscribe()
