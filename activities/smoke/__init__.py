"""Layer ``smoke``: the smoke-test job run as the tenant."""
