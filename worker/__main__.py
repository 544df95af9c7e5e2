"""``python -m worker``: start the tenantflow worker."""

from worker.run import main

main()
