"""Read-only lookups through the Authentik LDAP outpost with ldap3: is it up, and how do users resolve.

The outpost serves users as ``cn=<username>,ou=users,<base>`` (posixAccount with uidNumber,
gidNumber and the operational ``memberOf``) and groups as ``cn=<name>,ou=groups,<base>``. The bind
DN and password come from :func:`activities.common.settings.settings`; LDAP failures become Temporal errors
(bad credentials, an untrusted certificate and a base DN that is not served fail fast; an unreachable or
busy server retries) without the password in any message. Over ldaps:// the certificate is verified
(:func:`server`).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager

from ldap3 import BASE, LEVEL, NONE, Connection, Entry, Server, Tls
from ldap3.core.exceptions import (
    LDAPBindError,
    LDAPException,
    LDAPInsufficientAccessRightsResult,
    LDAPInvalidCredentialsResult,
    LDAPInvalidDNSyntaxResult,
    LDAPNoSuchObjectResult,
    LDAPSocketOpenError,
    LDAPSSLConfigurationError,
)
from ldap3.utils.conv import escape_filter_chars
from pydantic import BaseModel, Field
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import TRANSIENT, fail
from tenantflow.activities.common.settings import settings
from tenantflow.models.results import Finding, Severity

SERVICE = "LDAP outpost"
MISCONFIGURED = (LDAPNoSuchObjectResult, LDAPInsufficientAccessRightsResult, LDAPInvalidDNSyntaxResult)
"""Answers (RFC 4511 result codes 32, 50, 34) that a retry will not change: the entries under the configured base DN
do not exist, the bind user may not read them, or a DN is malformed. They fail at once naming the settings; every
other failure (no connection, a dropped session, busy or unavailable) is transient and retried."""


class DirectoryUser(BaseModel):
    """A user entry as the outpost serves it; numbers are ``None`` when absent or not numeric."""

    dn: str
    username: str
    uid_number: int | None
    gid_number: int | None
    member_of: list[str] = Field(default_factory=list)


class DirectoryGroup(BaseModel):
    dn: str
    name: str
    gid_number: int | None
    members: list[str] = Field(default_factory=list)


def users_dn() -> str:
    return f"ou=users,{settings().ldap_base_dn}"


def group_dn(name: str) -> str:
    return f"cn={name},ou=groups,{settings().ldap_base_dn}"


def _ldap_failure(exc: LDAPException) -> ApplicationError:
    if "certificate verify failed" in str(exc).lower() or isinstance(exc, LDAPSSLConfigurationError):
        return fail(
            "TlsVerifyFailed",
            f"{SERVICE} at {settings().ldap_url}: its TLS certificate is not trusted "
            f"({type(exc).__name__}); set LDAP_CA_FILE to the CA that signed it",
        )
    if isinstance(exc, LDAPBindError | LDAPInvalidCredentialsResult):
        return fail(
            "Forbidden",
            f"{SERVICE} refused the bind as {settings().ldap_bind_dn}: {type(exc).__name__}; "
            f"check the bind password in Secret {settings().ldap_bind_secret_namespace}/"
            f"{settings().ldap_bind_secret}",
        )
    if isinstance(exc, MISCONFIGURED):
        return fail(
            "Invalid",
            f"{SERVICE} at {settings().ldap_url} refused the read: {type(exc).__name__}; check LDAP_BASE_DN "
            f"({settings().ldap_base_dn}) and that {settings().ldap_bind_dn} may read the users under it",
        )
    reason = "is unreachable" if isinstance(exc, LDAPSocketOpenError) else "failed"
    return ApplicationError(f"{SERVICE} at {settings().ldap_url} {reason}: {type(exc).__name__}", type=TRANSIENT)


def server() -> Server:
    """The outpost; over ldaps:// the certificate is verified (``LDAP_CA_FILE``, else the system trust store)
    unless ``LDAP_TLS_INSECURE`` (labs only) turns verification off. ``get_info=NONE``: ldap3 would otherwise read
    the root DSE and the whole subschema after every bind (two searches, and parsing the schema costs more CPU than
    the lookups) only to type the values, which these lookups convert themselves
    (https://ldap3.readthedocs.io/en/latest/server.html)."""
    conf = settings()
    tls = Tls(
        validate=ssl.CERT_NONE if conf.ldap_tls_insecure else ssl.CERT_REQUIRED,
        ca_certs_file=conf.ldap_ca_file or None,
        version=ssl.PROTOCOL_TLS_CLIENT,
    )
    return Server(
        conf.ldap_url, use_ssl=conf.ldap_url.lower().startswith("ldaps://"), tls=tls, get_info=NONE, connect_timeout=5
    )


def tls_findings() -> list[Finding]:
    """A warning on every run whose outpost certificate is not verified."""
    if not settings().ldap_tls_insecure:
        return []
    return [
        Finding.failed(
            check="identity.ldap_tls",
            severity=Severity.warning,
            message="LDAP_TLS_INSECURE is set: the LDAP outpost's certificate is NOT verified (labs only)",
            fix="set LDAP_CA_FILE to the CA that signed the outpost's certificate and unset LDAP_TLS_INSECURE",
        )
    ]


@contextmanager
def bound() -> Iterator[Connection]:
    """A connection bound as the outpost's bind user; closed on exit."""
    conf = settings()
    try:
        conn = Connection(
            server(),
            user=conf.ldap_bind_dn,
            password=conf.ldap_bind_password.get_secret_value(),
            auto_bind=True,
            raise_exceptions=True,
            receive_timeout=10,
        )
    except LDAPException as exc:
        raise _ldap_failure(exc) from None
    try:
        yield conn
    except LDAPException as exc:
        raise _ldap_failure(exc) from None
    finally:
        conn.unbind()


def _int(values: object) -> int | None:
    try:
        return int(str(values))
    except ValueError:
        return None


def probe() -> int:
    """Bind and search the users container; return how many entries it holds."""
    with bound() as conn:
        conn.search(users_dn(), "(objectClass=*)", search_scope=LEVEL, attributes=["1.1"])
        return len(conn.entries)


USER_ATTRIBUTES = ["cn", "uidNumber", "gidNumber", "memberOf"]
LOOKUP_BATCH = 100
"""Usernames per search of :func:`lookup_users`: one ``(|(cn=a)(cn=b)...)`` filter (RFC 4515) of at most this many
terms instead of a search per user."""


def _directory_user(entry: Entry, username: str) -> DirectoryUser:
    attrs = entry.entry_attributes_as_dict
    return DirectoryUser(
        dn=entry.entry_dn,
        username=username,
        uid_number=_int(attrs["uidNumber"][0]) if attrs.get("uidNumber") else None,
        gid_number=_int(attrs["gidNumber"][0]) if attrs.get("gidNumber") else None,
        member_of=[str(v) for v in attrs.get("memberOf", [])],
    )


def lookup_user(conn: Connection, username: str) -> DirectoryUser | None:
    """What ``ldapsearch (cn=<username>) uidNumber gidNumber memberOf`` shows, or ``None``."""
    conn.search(users_dn(), f"(cn={escape_filter_chars(username)})", search_scope=LEVEL, attributes=USER_ATTRIBUTES)
    return _directory_user(conn.entries[0], username) if conn.entries else None


def lookup_users(usernames: list[str]) -> dict[str, DirectoryUser | None]:
    """:func:`lookup_user` for every name, :data:`LOOKUP_BATCH` names a search; None for a name not found."""
    found: dict[str, DirectoryUser] = {}
    with bound() as conn:
        for start in range(0, len(usernames), LOOKUP_BATCH):
            terms = "".join(f"(cn={escape_filter_chars(n)})" for n in usernames[start : start + LOOKUP_BATCH])
            conn.search(users_dn(), f"(|{terms})", search_scope=LEVEL, attributes=USER_ATTRIBUTES)
            for entry in conn.entries:
                name = str(entry.entry_attributes_as_dict["cn"][0]).lower()
                found[name] = _directory_user(entry, name)
    return {name: found.get(name.lower()) for name in usernames}


def lookup_group(name: str) -> DirectoryGroup | None:
    with bound() as conn:
        try:
            conn.search(group_dn(name), "(objectClass=*)", search_scope=BASE, attributes=["gidNumber", "member"])
        except LDAPNoSuchObjectResult:
            return None
        if not conn.entries:
            return None
        attrs = conn.entries[0].entry_attributes_as_dict
        return DirectoryGroup(
            dn=group_dn(name),
            name=name,
            gid_number=_int(attrs["gidNumber"][0]) if attrs.get("gidNumber") else None,
            members=[str(v) for v in attrs.get("member", [])],
        )
