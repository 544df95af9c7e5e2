"""Identity numbers unique across the whole directory: no entry but the tenant's own holds its uid or gid.

On a shared cluster a uidNumber held by two entries lets each person read the other's files on the
shared storage, and a tenant gidNumber held by a stranger's entry opens the tenant's group-owned files
to them. Authentik numbers users ``uid_start_number + pk`` and knows nothing of entries it did not
write (a stale entry left in the directory, another provider's tree, a restored backup), so
tenantflow asks the directory itself, as the LDAP outpost serves it: every naming context its root DSE
lists (any tenant, any tree), searched for other entries holding each tenant user's ``uidNumber`` and
the tenant group's ``gidNumber``. The tenant's own entries are not collisions: a user's entry for its
uid; the group, the tenant's users and their virtual groups (``ou=virtual-groups``) for the gid.

* :func:`preflight_findings`: before the plan, for what exists then (the group, adopted users).
* :func:`fail_on_collisions`: after the users step (in ``identity.verify_ldap``), a non-retryable
  ``IdentityCollision`` naming both entries and the fix, with the findings as error details, so the
  run stops before Slurm or storage are touched.
* :func:`unresolved_causes`: why slurmctld may not resolve users (a collision, a user missing from the
  directory), for the ``slurm.users`` wait that gives up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ldap3 import BASE, SUBTREE, Connection
from ldap3.core.exceptions import LDAPNoSuchObjectResult
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import ldap_check
from tenantflow.activities.common.settings import settings
from tenantflow.models.results import Finding
from tenantflow.models.tenant import TenantContract

CHECK = "identity.unique_ids"
MISSING_CHECK = "identity.directory_entry"
COLLISION = "IdentityCollision"
UID_FIX = (
    "if {other} is stale, remove it from the directory; otherwise move Authentik's numbering past it (the "
    "LDAP provider's uid start number, or the uidNumber property mapping / the user's uidNumber attribute) "
    "and re-run"
)
GID_FIX = (
    "if {other} is stale, remove it from the directory; otherwise give the tenant group a free gidNumber (its "
    "gidNumber attribute in Authentik, or the LDAP provider's gid start number / property mapping) and re-run"
)


@dataclass(frozen=True)
class Claim:
    """A number a tenant entry holds, and the entries allowed to hold it too (lower-case DNs)."""

    attribute: str
    number: int
    owner: str
    allowed: frozenset[str]


@dataclass(frozen=True)
class Collision:
    claim: Claim
    other: str

    def finding(self) -> Finding:
        kind, fix = ("uid", UID_FIX) if self.claim.attribute == "uidNumber" else ("gid", GID_FIX)
        return Finding(
            check=CHECK,
            ok=False,
            message=f"{self.claim.attribute} {self.claim.number} of {self.claim.owner} is also held by "
            f"{self.other}: both would own the same files on shared storage ({kind} collision)",
            fix=fix.format(other=self.other),
        )


def naming_contexts(conn: Connection) -> list[str]:
    """Every tree the directory serves (the root DSE's namingContexts), else the configured base DN."""
    conn.search("", "(objectClass=*)", search_scope=BASE, attributes=["namingContexts"])
    contexts = [str(v) for e in conn.entries for v in e.entry_attributes_as_dict.get("namingContexts", [])]
    return contexts or [settings().ldap_base_dn]


def holders(conn: Connection, bases: list[str], attribute: str, number: int) -> list[str]:
    """DNs of every entry, in any of ``bases``, whose ``attribute`` equals ``number``."""
    found: list[str] = []
    for base in bases:
        try:
            conn.search(base, f"({attribute}={number})", search_scope=SUBTREE, attributes=["1.1"])
        except LDAPNoSuchObjectResult:
            continue
        found.extend(e.entry_dn for e in conn.entries)
    return sorted(set(found))


def _group_gid(conn: Connection, slug: str) -> int | None:
    try:
        conn.search(ldap_check.group_dn(slug), "(objectClass=*)", search_scope=BASE, attributes=["gidNumber"])
    except LDAPNoSuchObjectResult:
        return None
    values = conn.entries[0].entry_attributes_as_dict.get("gidNumber") if conn.entries else None
    return int(str(values[0])) if values and str(values[0]).isdigit() else None


def _virtual_group(user_dn: str) -> str:
    return user_dn.lower().replace(",ou=users,", ",ou=virtual-groups,", 1)


def claims(conn: Connection, usernames: list[str], slug: str | None, leaving: Sequence[str] = ()) -> list[Claim]:
    """The numbers the tenant's entries hold now: each existing user's uid, and the group's gid (with ``slug``).
    ``leaving``: users a tenant change removes, who hold the tenant's gid until it has removed them."""
    found = [u for u in (ldap_check.lookup_user(conn, name) for name in usernames) if u is not None]
    result = [Claim("uidNumber", u.uid_number, u.dn, frozenset({u.dn.lower()})) for u in found if u.uid_number]
    gid = _group_gid(conn, slug) if slug else None
    if slug and gid:
        group = ldap_check.group_dn(slug)
        members = found + [u for u in (ldap_check.lookup_user(conn, name) for name in leaving) if u is not None]
        tenant = {group.lower()} | {u.dn.lower() for u in members} | {_virtual_group(u.dn) for u in members}
        result.append(Claim("gidNumber", gid, group, frozenset(tenant)))
    return result


def collisions(
    conn: Connection, usernames: list[str], slug: str | None, leaving: Sequence[str] = ()
) -> list[Collision]:
    bases = naming_contexts(conn)
    return [
        Collision(claim, other)
        for claim in claims(conn, usernames, slug, leaving)
        for other in holders(conn, bases, claim.attribute, claim.number)
        if other.lower() not in claim.allowed
    ]


def preflight_findings(contract: TenantContract, leaving: Sequence[str] = ()) -> list[Finding]:
    """Collisions of what exists before the run (the group, adopted users); empty when the outpost does not
    answer (the outpost's own preflight finding reports that)."""
    try:
        with ldap_check.bound() as conn:
            return [c.finding() for c in collisions(conn, contract.usernames, contract.slug, leaving)]
    except ApplicationError:
        return []


def fail_on_collisions(contract: TenantContract, leaving: Sequence[str] = ()) -> None:
    """Raise a non-retryable ``IdentityCollision`` (findings in the details) when a tenant number is not unique."""
    with ldap_check.bound() as conn:
        found = collisions(conn, contract.usernames, contract.slug, leaving)
    if found:
        findings = [c.finding() for c in found]
        raise ApplicationError(
            f"identity numbers of {contract.slug} are not unique in the directory: "
            + "; ".join(f"{f.message} (fix: {f.fix})" for f in findings),
            *[f.model_dump(mode="json") for f in findings],
            type=COLLISION,
            non_retryable=True,
        )


def unresolved_causes(usernames: list[str]) -> list[Finding]:
    """What the directory shows about users a host does not resolve: entries missing, uid collisions."""
    with ldap_check.bound() as conn:
        missing = [name for name in usernames if ldap_check.lookup_user(conn, name) is None]
        found = collisions(conn, usernames, None)
    causes = [
        Finding(
            check=MISSING_CHECK,
            ok=False,
            message=f"{name} is missing from the directory (no cn={name} under {ldap_check.users_dn()})",
            fix="check that the identity step created the user in Authentik and that the LDAP outpost serves it",
        )
        for name in missing
    ]
    return causes + [c.finding() for c in found]
