"""Controllers that act on the emulated clusters like the real operators do.

``CONTROLLERS`` lists each controller's ``run(ctx)`` coroutine function; ``lab.serve``
starts them all as tasks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from lab.context import LabContext

CONTROLLERS: list[Callable[[LabContext], Awaitable[None]]] = []
