"""``python -m starter``: the tenantflow CLI."""

from tenantflow.starter.cli import app

app()
