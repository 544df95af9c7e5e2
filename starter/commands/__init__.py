"""The ``tenantflow`` commands, one module per kind of work; ``starter.cli`` registers them in order."""
