"""``python -m tenantflow.worker``: start the tenantflow worker (ended as :mod:`worker.program` says)."""

from tenantflow.worker.program import run_program
from tenantflow.worker.run import main

run_program(main)
