"""Controllers that act on the emulated clusters like the real operators do.

``CONTROLLERS`` lists each controller's ``run(ctx)`` coroutine function; ``lab.serve``
starts them all as tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers import csi, hub, kueue, login, reservation, slurm, worker_agent

CONTROLLERS: list[Callable[[LabContext], Coroutine[Any, Any, None]]] = [
    reservation.run,
    login.run,
    slurm.run,
    hub.run,
    worker_agent.run,
    kueue.run,
    csi.run,
]
