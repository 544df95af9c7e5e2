"""``python -m starter``: the tenantflow CLI."""

from starter.cli import app

app()
