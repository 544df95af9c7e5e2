"""``python -m tenantflow.lab.konduktor``: the lab's konduktor stand-in."""

from tenantflow.lab.konduktor.cli import main

main()
