"""Layer ``validate``: the read-only cross-check of an onboarded tenant."""
