"""Run a real OpenLDAP slapd shaped like the Authentik LDAP outpost, with all state in one folder.

:func:`start_slapd` renders ``slapd.conf`` from ``slapd.template.conf`` (stock core, cosine,
inetorgperson and nis schemas plus ``authentik-outpost.schema``, an mdb database, the memberof
overlay with refint), starts slapd on ``ldap://127.0.0.1:<port>`` and ``ldapi://<state>/ldap/ldapi``,
and seeds the tree (base, ``ou=users``, ``ou=groups``, ``ou=virtual-groups``) and the bind user
``cn=ldap-bind,ou=users,...`` (read access to everything). Writes go through the rootdn
``cn=admin,dc=auth,dc=example,dc=internal``. Entry shapes are documented in :mod:`lab.daemons.ldap_tree`.
Both passwords are generated once and kept (mode 0600) in the state folder, so a restart reuses them.
"""

from __future__ import annotations

import secrets
import shutil
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from string import Template

from ldap3 import Connection

from tenantflow.lab.daemons import ldap_tree
from tenantflow.lab.daemons.process import Daemon, port_open, start_daemon, stop

HERE = Path(__file__).parent
SCHEMA_FILE = HERE / "authentik-outpost.schema"
CONFIG_TEMPLATE = HERE / "slapd.template.conf"
ROOT_DN = f"cn=admin,{ldap_tree.BASE_DN}"
BIND_DN = ldap_tree.user_dn(ldap_tree.BIND_USERNAME)
BIND_UID_NUMBER = ldap_tree.UID_START_NUMBER + 1


@dataclass(frozen=True)
class SlapdHandle:
    """A running slapd: where it listens and the credentials to use."""

    daemon: Daemon
    url: str
    ldapi_url: str
    config: Path
    base_dn: str
    bind_dn: str
    bind_password: str
    admin_dn: str
    admin_password: str

    def connect_admin(self) -> Connection:
        return ldap_tree.connect(self.url, self.admin_dn, self.admin_password)

    def connect_bind(self) -> Connection:
        return ldap_tree.connect(self.url, self.bind_dn, self.bind_password)

    def stop(self) -> None:
        stop(self.daemon)


def _secret(path: Path) -> str:
    """Read the password in ``path``, creating it (mode 0600) on first use."""
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(24))
    return path.read_text().strip()


def render_config(ldap_dir: Path, admin_password: str, allow_anonymous_read: bool) -> Path:
    config = ldap_dir / "slapd.conf"
    text = Template(CONFIG_TEMPLATE.read_text()).substitute(
        schema_file=SCHEMA_FILE,
        state_dir=ldap_dir,
        base_dn=ldap_tree.BASE_DN,
        root_dn=ROOT_DN,
        root_pw_hash=ldap_tree.ssha(admin_password),
        db_dir=ldap_dir / "db",
        bind_dn=BIND_DN,
        others_access="read" if allow_anonymous_read else "none",
    )
    config.write_text(text)
    config.chmod(0o600)
    return config


def start_slapd(state_dir: Path, port: int, *, allow_anonymous_read: bool = False) -> SlapdHandle:
    """Start slapd with its config and database under ``state_dir/ldap`` and seed the outpost tree.

    Anonymous searches are refused, as by the outpost, unless ``allow_anonymous_read``.
    """
    slapd = shutil.which("slapd") or "/usr/sbin/slapd"
    ldap_dir = state_dir / "ldap"
    (ldap_dir / "db").mkdir(parents=True, exist_ok=True)
    admin_password = _secret(ldap_dir / "admin.password")
    bind_password = _secret(ldap_dir / "bind.password")
    config = render_config(ldap_dir, admin_password, allow_anonymous_read)
    url = f"ldap://127.0.0.1:{port}"
    ldapi_url = "ldapi://" + urllib.parse.quote(str(ldap_dir / "ldapi"), safe="")
    daemon = start_daemon(
        state_dir,
        "slapd",
        [slapd, "-d", "0", "-f", str(config), "-h", f"{url}/ {ldapi_url}"],
        port_open(port),
        timeout=20,
    )
    handle = SlapdHandle(
        daemon=daemon,
        url=url,
        ldapi_url=ldapi_url,
        config=config,
        base_dn=ldap_tree.BASE_DN,
        bind_dn=BIND_DN,
        bind_password=bind_password,
        admin_dn=ROOT_DN,
        admin_password=admin_password,
    )
    with handle.connect_admin() as conn:
        ldap_tree.ensure_tree(conn)
        ldap_tree.upsert_user(
            conn,
            ldap_tree.LdapUser(
                username=ldap_tree.BIND_USERNAME,
                name="LDAP bind service account",
                uid_number=BIND_UID_NUMBER,
                gid_number=BIND_UID_NUMBER,
                password=bind_password,
            ),
        )
    return handle
