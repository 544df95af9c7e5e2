"""The one-shot enrollment blob and the redemption token the worker agent presents to the Hub.

The blob (``kdk1.<base64url JSON>``) carries the Hub address, the tenant namespace, the worker name, the
enrollment id and the Ed25519 private key. Bootstrap signs the claims with that key and leaves only the
claims and the signature (the redemption token) on the worker; :func:`verify` checks a token against the
public key of the Hub's BootstrapEnrollment.
"""

from __future__ import annotations

import base64
import json

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from tenantflow.lab.konduktor.facts import signed_claims

PREFIX = "kdk1."
CLAIMS = ("hub", "namespace", "worker", "enrollmentId")


class BlobError(ValueError):
    """A malformed blob or token, or one whose signature does not verify."""


def new_key() -> tuple[Ed25519PrivateKey, str]:
    """A fresh signing key and its base64 raw public key."""
    key = Ed25519PrivateKey.generate()
    return key, base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def encode(claims: dict[str, str], key: Ed25519PrivateKey) -> str:
    raw = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    body = json.dumps({**claims, "key": base64.b64encode(raw).decode()}, sort_keys=True).encode()
    return PREFIX + base64.urlsafe_b64encode(body).decode()


def decode(blob: str) -> tuple[dict[str, str], Ed25519PrivateKey]:
    """The claims and the private key of ``blob``; :class:`BlobError` without echoing the blob."""
    blob = blob.strip()
    try:
        if not blob.startswith(PREFIX):
            raise ValueError("missing kdk1. prefix")
        data = json.loads(base64.urlsafe_b64decode(blob[len(PREFIX) :]))
        key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(data["key"]))
        return {name: str(data[name]) for name in CLAIMS}, key
    except (ValueError, KeyError, TypeError) as exc:
        raise BlobError(f"not a konduktor enrollment blob ({type(exc).__name__})") from None


def redemption_token(blob: str) -> str:
    """Claims plus their signature: what the worker agent presents; it holds no private key."""
    claims, key = decode(blob)
    signature = base64.b64encode(key.sign(signed_claims(claims))).decode()
    return json.dumps({**claims, "signature": signature}, sort_keys=True)


def verify(token: str, public_key: str) -> dict[str, str]:
    """The token's claims when its signature verifies against ``public_key``; else :class:`BlobError`."""
    try:
        data = json.loads(token)
        claims = {name: str(data[name]) for name in CLAIMS}
        Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key)).verify(
            base64.b64decode(data["signature"]), signed_claims(claims)
        )
    except (ValueError, KeyError, TypeError, InvalidSignature) as exc:
        raise BlobError(f"redemption token does not verify ({type(exc).__name__})") from None
    return claims
