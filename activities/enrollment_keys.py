"""The one-shot enrollment signing key: an Ed25519 key that lives only in a Secret on the Hub.

:func:`create_key` generates the key and stores the raw private bytes in Secret
``enroll-<worker>-signing-key`` of the tenant namespace; only the Secret name and
the public key leave this module. :func:`sign` loads the key from that Secret and
signs the blob's claims; :func:`destroy_key` deletes the Secret (after redemption
or on failure). The same Secret holds the signed blob, so bootstrap takes it by
reference too.
"""

from __future__ import annotations

import base64
import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from tenantflow.activities.kubeobjects import KubeObjects
from tenantflow.models.enrollment_workflows import INSTALLED_BY, INSTALLER, signed_claims

PRIVATE_KEY = "ed25519.key"
BLOB = "blob"


def key_secret_name(worker: str) -> str:
    return f"enroll-{worker}-signing-key"


def create_key(objs: KubeObjects, namespace: str, worker: str) -> tuple[str, str]:
    """Create (or reuse) the key Secret; return ``(secret name, base64 public key)``."""
    name = key_secret_name(worker)
    existing = objs.get("Secret", name, namespace)
    if existing is None:
        key = Ed25519PrivateKey.generate()
        raw = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        objs.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": name, "namespace": namespace, "labels": {INSTALLED_BY: INSTALLER}},
                "data": {PRIVATE_KEY: base64.b64encode(raw).decode()},
            }
        )
    else:
        key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(existing["data"][PRIVATE_KEY]))
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return name, base64.b64encode(public).decode()


def sign_blob(objs: KubeObjects, namespace: str, secret: str, claims: dict[str, str]) -> None:
    """Sign ``claims`` with the key in ``secret`` and store the blob next to it."""
    stored = objs.get("Secret", secret, namespace)
    if stored is None:
        raise LookupError(f"signing key Secret {namespace}/{secret} is gone")
    key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(stored["data"][PRIVATE_KEY]))
    signature = base64.b64encode(key.sign(signed_claims(claims))).decode()
    blob = base64.b64encode(json.dumps({**claims, "signature": signature}).encode()).decode()
    objs.patch("Secret", secret, namespace, {"data": {BLOB: base64.b64encode(blob.encode()).decode()}})


def read_blob(objs: KubeObjects, namespace: str, secret: str) -> str:
    stored = objs.get("Secret", secret, namespace)
    if stored is None or BLOB not in (stored.get("data") or {}):
        raise LookupError(f"enrollment blob Secret {namespace}/{secret} is gone")
    return base64.b64decode(stored["data"][BLOB]).decode()


def destroy_key(objs: KubeObjects, namespace: str, secret: str) -> bool:
    return objs.delete("Secret", secret, namespace)
