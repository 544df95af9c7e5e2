"""A throw-away self-signed certificate for serving the emulator over HTTPS.

kubectl (client-go) sends a kubeconfig's bearer token only over TLS, so any test
of per-user policies through kubectl needs ``https://``. :func:`self_signed`
makes a key and a certificate for ``127.0.0.1``/``localhost``; the PEM goes into
the kubeconfig as ``certificate-authority-data`` and the context into
:func:`lab.kubeapi.server.start_kube_api`. :func:`kept_cert` serves the same certificate
again after a restart of the lab, so clients that loaded the kubeconfig keep trusting it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tenantflow.lab.statefile import write_atomic

RENEW_BEFORE = dt.timedelta(days=1)


@dataclass(frozen=True)
class ServingCert:
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context


def self_signed(common_name: str = "lab-kube-apiserver", days: int = 30) -> ServingCert:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    return ServingCert(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


def kept_cert(cert_file: Path, key_file: Path) -> ServingCert:
    """The certificate and key saved in these files unless they expire within a day, else new ones saved there
    (the key mode 0600)."""
    if cert_file.exists() and key_file.exists():
        cert_pem, key_pem = cert_file.read_bytes(), key_file.read_bytes()
        expires = x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc
        if expires - dt.datetime.now(dt.UTC) > RENEW_BEFORE:
            return ServingCert(cert_pem=cert_pem, key_pem=key_pem)
    cert = self_signed()
    write_atomic(key_file, cert.key_pem.decode())
    write_atomic(cert_file, cert.cert_pem.decode())
    return cert
