"""Layer ``identity``: the tenant's Authentik group and users and their POSIX numbers, checked through LDAP.

The Authentik client and the LDAP directory it is checked against live in the kit (:mod:`activities.common`).
"""
