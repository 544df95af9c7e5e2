"""The test session's principals and approval keys: who starts runs, who approves them, and the HTTP API's key.

The worker's defaults hold in tests as in production: four-eyes and verified approvers on for every guarded
workflow type. :func:`session_approvers` makes, once per test process, an identity map and allowed-signers file
(:class:`tenantflow.starter.approvers.LocalApprovers`) and exports their settings, so every worker the tests start
(in-process with ``run_worker``, or as a subprocess inheriting the environment) checks approvals against them.
Each principal has its own key:

- ``tester``: the identities this process starts runs under (the SDK's default client identity ``pid@host``,
  tenantflow's ``user@host``, the subject of the tests' mTLS client certificate); :func:`as_tester` signs as them, so
  the runs it starts carry a start proof and the four-eyes rule counts the tester as their (verified) starter;
- ``reviewer``: a second person: :func:`reviewer` answers gates as them, verified;
- ``alice`` and ``bob`` (``alice@ops-host``, ``alice@laptop``; ``bob@ops-host``), for the four-eyes tests;
- ``tenantflow-api`` (``tenantflow-api@api-host``), whose key may sign for anyone (``*``), as the HTTP API's does.
"""

from __future__ import annotations

import atexit
import functools
import getpass
import os
import shutil
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

from tenantflow.starter.approvers import LocalApprovers
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.principals import IdentityMap
from tenantflow.worker.signatures import APPROVAL_KEY_ENV, ApprovalSigner

TESTER = "tester"
REVIEWER = "reviewer"
API = "tenantflow-api"
TESTER_IDENTITIES = (f"{os.getpid()}@{socket.gethostname()}", f"{getpass.getuser()}@{socket.gethostname()}")
PRINCIPALS: Mapping[str, tuple[tuple[str, ...], str | None]] = {
    TESTER: ((*TESTER_IDENTITIES, "CN=worker"), None),  # CN=worker: tests/worker/test_temporal_tls.py's mTLS client
    REVIEWER: ((), None),
    "alice": (("alice@ops-host", "alice@laptop"), None),
    "bob": (("bob@ops-host",), None),
    API: (("tenantflow-api@api-host",), "*"),
}
"""Principal: (its identities, the principal pattern its key may sign for when not only itself)."""


@dataclass(frozen=True)
class SessionApprovers:
    trust: LocalApprovers
    signers: Mapping[str, ApprovalSigner]
    """Each principal's key."""

    def signer_of(self, identity: str) -> ApprovalSigner | None:
        """The key of the principal ``identity`` belongs to (None: no principal)."""
        principal = IdentityMap.load(self.trust.principals_file).principal(identity)
        return self.signers.get(principal) if principal else None

    def key_env(self, principal: str) -> dict[str, str]:
        """The client setting that makes a CLI subprocess sign with ``principal``'s key."""
        return {APPROVAL_KEY_ENV: str(self.signers[principal].path)}


@functools.cache
def session_approvers() -> SessionApprovers:
    """This process's principals and keys, made once; their worker settings exported to the environment."""
    directory = Path(tempfile.mkdtemp(prefix="tenantflow-approvers-"))
    atexit.register(shutil.rmtree, directory, True)
    trust = LocalApprovers(directory)
    signers = {name: trust.add(name, ids, signs_for) for name, (ids, signs_for) in PRINCIPALS.items()}
    os.environ.update(trust.env())
    return SessionApprovers(trust, signers)


def reviewer(api: TenantflowClient) -> TenantflowClient:
    """``api`` answering gates as the reviewer, a principal other than the tester, with proof."""
    return TenantflowClient(api.client, api.task_queue, signer=session_approvers().signers[REVIEWER], identity=REVIEWER)


def as_tester(client: Client, task_queue: str) -> TenantflowClient:
    """A client on ``client`` (an identity of the tester) that signs with the tester's key: the runs it starts carry
    a start proof, so that under the four-eyes rule the reviewer may approve them."""
    return TenantflowClient(client, task_queue, signer=session_approvers().signers[TESTER])


def key_of_tester() -> str:
    """The path of the tester's key (``TENANTFLOW_APPROVAL_KEY`` of a client that starts runs as the tester)."""
    return str(session_approvers().signers[TESTER].path)
