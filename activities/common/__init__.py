"""The kit below every layer: what several layers share.

Errors, settings, activity registration by catalogue step, polling, fan-out, run ids and findings; the service
clients (the Kubernetes client, objects and ensure with the rendered tenant manifests, the HTTP service base with
the Authentik and Weka clients, the LDAP directory, the Slurm commands run in the Slurm pods, the konduktor CLI,
the login pod); the versioned record store. The kit imports no layer (an import-linter contract in pyproject.toml).
"""
