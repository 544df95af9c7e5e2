"""Layer ``capacity``: the tenant's node reservation (node census, choice and resize)."""
