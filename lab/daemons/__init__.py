"""Real daemons for the lab: slapd as the Authentik LDAP outpost, and the Slurm accounting stack."""
