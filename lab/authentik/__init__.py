"""Authentik API v3 stand-in: users, groups, membership and the LDAP outpost projection into slapd."""
