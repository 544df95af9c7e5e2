"""Which connection setting to fix, read from the error text of a failed ``Client.connect``.

The SDK reports a failed connection as a ``RuntimeError`` carrying the transport's text (rustls, tonic, or the HTTP
status a gRPC proxy answered with). :func:`diagnose` maps the known failures to the ``temporal`` CLI's variable
that fixes them (the same key without the ``TEMPORAL_`` prefix, lowercased, in a profile of the config file).
"""

from __future__ import annotations

import re

from temporalio.service import RPCStatusCode

CLIENT_CERT = "TEMPORAL_TLS_CLIENT_CERT_PATH"
CLIENT_KEY = "TEMPORAL_TLS_CLIENT_KEY_PATH"
SERVER_CA = "TEMPORAL_TLS_SERVER_CA_CERT_PATH"

# rustls alerts and errors, tonic status codes, and the HTTP statuses a TLS-terminating proxy answers with
_NO_SERVER_TRUST = re.compile(r"UnknownIssuer|BadSignature|invalid peer certificate|certificate verify failed")
_WRONG_NAME = re.compile(r"NotValidForName|CertNotValidForName")
_CLIENT_CERT_REFUSED = re.compile(
    r"CertificateRequired|certificate required|BadCertificate|UnknownCA|"
    r"status: 400 Bad Request|AccessDenied"
)
_UNAUTHENTICATED = re.compile(
    r"code: Unauthenticated|status: 401 Unauthorized|code: PermissionDenied|"
    r"status: 403 Forbidden"
)
_NOT_TLS = re.compile(r"InvalidContentType|CorruptMessage|wrong version number|record overflow")
_TLS_TO_PLAIN = re.compile(
    r"FRAME_SIZE_ERROR|h2 protocol error|status: 400 Bad Request|PROTOCOL_ERROR|connection closed|ConnectionReset"
)
_UNREACHABLE = re.compile(
    r"ConnectionRefused|tcp connect error|dns error|failed to lookup|timed out|"
    r"ConnectionReset|Connection reset"
)


def diagnose(error: str, *, tls: bool, api_key: bool, client_cert: bool) -> tuple[str, RPCStatusCode]:
    """``(message naming the setting, status)`` for the error text of a failed connect with these settings."""
    if _NO_SERVER_TRUST.search(error):
        return (
            f"{SERVER_CA}: the server's certificate is not signed by a CA the client trusts "
            "(set the CA that issued the server's certificate)",
            RPCStatusCode.UNAVAILABLE,
        )
    if _WRONG_NAME.search(error):
        return (
            "TEMPORAL_TLS_SERVER_NAME: the server's certificate is not valid for the name the client expects "
            "(set the name the certificate was issued for)",
            RPCStatusCode.UNAVAILABLE,
        )
    if tls and _CLIENT_CERT_REFUSED.search(error):
        if not client_cert:
            return (
                f"{CLIENT_CERT}: the server requires a client certificate (set {CLIENT_CERT} and {CLIENT_KEY})",
                RPCStatusCode.UNAUTHENTICATED,
            )
        return (
            f"{CLIENT_CERT}: the server refused the client certificate (is it signed by a CA the server trusts, "
            f"and is {CLIENT_KEY} its key?)",
            RPCStatusCode.UNAUTHENTICATED,
        )
    if _UNAUTHENTICATED.search(error):
        if api_key:
            return ("TEMPORAL_API_KEY: the server refused the API key", RPCStatusCode.UNAUTHENTICATED)
        return ("TEMPORAL_API_KEY: the server requires an API key", RPCStatusCode.UNAUTHENTICATED)
    if tls and _NOT_TLS.search(error):
        return (
            "TEMPORAL_TLS: the server does not speak TLS on this address (TEMPORAL_TLS=false, or check "
            "TEMPORAL_ADDRESS)",
            RPCStatusCode.UNAVAILABLE,
        )
    if not tls and _TLS_TO_PLAIN.search(error):
        return (
            "TEMPORAL_TLS: the server did not answer plaintext gRPC, it likely expects TLS (TEMPORAL_TLS=true, with "
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA)",
            RPCStatusCode.UNAVAILABLE,
        )
    if _UNREACHABLE.search(error):
        return "TEMPORAL_ADDRESS: no Temporal server answers there", RPCStatusCode.UNAVAILABLE
    return "TEMPORAL_ADDRESS / TEMPORAL_TLS_*: cannot connect to Temporal", RPCStatusCode.UNAVAILABLE
