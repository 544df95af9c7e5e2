"""Layer ``drift``: what the plan would create against what is there, per layer."""
