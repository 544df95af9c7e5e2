"""The worker's service settings changed for a while: tests run the worker in their own process, and
``activities.settings.settings()`` reads the environment (once, cached)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from tenantflow.activities.settings import settings


@contextmanager
def service_env(**values: str) -> Iterator[None]:
    """Worker settings changed for one case (the worker runs in this process and reads them per call)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    settings.cache_clear()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        settings.cache_clear()
