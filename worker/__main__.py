"""``python -m worker``: start the tenantflow worker."""

from tenantflow.worker.run import main

main()
