"""The route table of the Weka REST API v2 stand-in (``/api/v2``): which handler serves which method and path."""

from __future__ import annotations

from aiohttp import web

from tenantflow.lab.weka.accounts import (
    cluster,
    create_org,
    create_user,
    delete_org,
    delete_user,
    get_org,
    list_orgs,
    list_users,
    login,
    multiple_orgs_exist,
    refresh,
    set_org_limits,
    token_expiry,
    update_org,
    whoami,
)
from tenantflow.lab.weka.filesystems import (
    create_filesystem,
    delete_filesystem,
    delete_quota,
    get_filesystem,
    get_quota,
    list_filesystems,
    list_quotas,
    resolve_path,
    set_quota,
    update_filesystem,
)
from tenantflow.lab.weka.service import PREFIX


def routes() -> list[web.RouteDef]:
    org = f"{PREFIX}/organizations/{{uid}}"
    fs = f"{PREFIX}/fileSystems/{{uid}}"
    quota = fs + "/quota/{inode_id}"
    return [
        web.post(f"{PREFIX}/login", login),
        web.post(f"{PREFIX}/login/refresh", refresh),
        web.get(f"{PREFIX}/users/whoami", whoami),
        web.get(f"{PREFIX}/security/defaultTokensExpiry", token_expiry),
        web.get(f"{PREFIX}/cluster", cluster),
        web.get(f"{PREFIX}/organizations", list_orgs),
        web.post(f"{PREFIX}/organizations", create_org),
        web.get(f"{PREFIX}/organizations/multipleOrgsExist", multiple_orgs_exist),
        web.get(org, get_org),
        web.put(org, update_org),
        web.delete(org, delete_org),
        web.put(org + "/limits", set_org_limits),
        web.get(f"{PREFIX}/users", list_users),
        web.post(f"{PREFIX}/users", create_user),
        web.delete(f"{PREFIX}/users/{{uid}}", delete_user),
        web.get(f"{PREFIX}/fileSystems", list_filesystems),
        web.post(f"{PREFIX}/fileSystems", create_filesystem),
        web.get(fs, get_filesystem),
        web.put(fs, update_filesystem),
        web.delete(fs, delete_filesystem),
        web.get(fs + "/resolvePath", resolve_path),
        web.get(fs + "/quota", list_quotas),
        web.get(quota, get_quota),
        web.put(quota, set_quota),
        web.patch(quota, set_quota),
        web.delete(quota, delete_quota),
        web.delete(fs + "/quotas/{inode_id}", delete_quota),
    ]
