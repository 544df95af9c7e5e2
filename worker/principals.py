"""The identity map: which identities are one person (a principal), for the four-eyes rule and allowed signers.

People reach tenantflow under several identities: a Temporal client identity (``alice@laptop``, or
``TEMPORAL_IDENTITY``), the subject of an mTLS client certificate (``CN=alice,O=Example``), the user of an HTTP API
token (``alice``). ``TENANTFLOW_PRINCIPALS`` names a TOML file that says which are whose::

    [principals]
    alice = ["alice@laptop", "CN=alice,O=Example", "alice"]
    bob = ["bob@ops-host"]

A principal's own name is one of its identities. Identities compare case-insensitively (``Alice@Laptop`` is
``alice@laptop``) and an identity belongs to at most one principal. An identity the map does not list is no
principal: under the four-eyes rule it can neither approve nor be told apart from the run's starter
(:mod:`tenantflow.worker.approvals`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tenantflow.models.gates import APPROVER_PATTERN

PRINCIPALS_ENV = "TENANTFLOW_PRINCIPALS"
NAME_FORMAT = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class PrincipalsFileError(ValueError):
    """An identity map that cannot be used; the message names the entry and the fix."""


@dataclass(frozen=True)
class IdentityMap:
    """Identity (case-folded) to principal."""

    owners: Mapping[str, str] = field(default_factory=dict)

    def principal(self, identity: str) -> str | None:
        """The principal ``identity`` belongs to; None when the map does not list it."""
        return self.owners.get(identity.strip().casefold())

    @classmethod
    def parse(cls, text: str, source: str = PRINCIPALS_ENV) -> IdentityMap:
        try:
            table = tomllib.loads(text).get("principals")
        except tomllib.TOMLDecodeError as exc:
            raise PrincipalsFileError(f"{source}: not TOML: {exc}") from None
        if not isinstance(table, dict) or not table:
            raise PrincipalsFileError(f'{source}: expected a [principals] table (alice = ["alice@laptop", ...])')
        owners: dict[str, str] = {}
        for name, identities in table.items():
            if not NAME_FORMAT.match(name):
                raise PrincipalsFileError(f"{source}: principal name {name!r} must match {NAME_FORMAT.pattern}")
            if not isinstance(identities, list) or not all(isinstance(i, str) for i in identities):
                raise PrincipalsFileError(f'{source}: principals.{name} must be a list of identities ["..."]')
            for identity in [name, *identities]:
                if not re.match(APPROVER_PATTERN, identity):
                    raise PrincipalsFileError(
                        f"{source}: principals.{name}: identity {identity!r} must match {APPROVER_PATTERN}"
                    )
                key = identity.strip().casefold()
                if owners.get(key, name.casefold()) != name.casefold():
                    raise PrincipalsFileError(
                        f"{source}: identity {identity!r} is listed for both {owners[key]!r} and {name!r}"
                    )
                owners[key] = name.casefold()
        return cls(owners)

    @classmethod
    def load(cls, path: Path | None) -> IdentityMap:
        """The map in ``path``; an empty map (no principals) without one."""
        if path is None:
            return cls()
        try:
            return cls.parse(path.read_text(), f"{PRINCIPALS_ENV}={path}")
        except FileNotFoundError:
            raise PrincipalsFileError(f"{PRINCIPALS_ENV}={path}: no such file") from None
