"""Layer ``login``: the tenant's login node (Helm release, authorized keys, readiness)."""
