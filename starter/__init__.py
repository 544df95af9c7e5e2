"""The CLI (``tenantflow``) and the Python API (``starter.client``) other services call."""
