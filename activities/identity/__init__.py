"""Layer ``identity``: Authentik users and groups, their POSIX numbers and the LDAP directory checks."""
