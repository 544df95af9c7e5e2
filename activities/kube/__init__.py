"""Layer ``kube``: the tenant's namespace, quota, limits, policies and role bindings."""
