"""Layer ``change``: changing an onboarded tenant's capacity and users."""
