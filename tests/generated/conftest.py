"""Generated-contract tests may take long to report a failure (Hypothesis shrinks it first): allow for that.

Their Hypothesis settings are in :mod:`tests.generated.profile`.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A failing example is shrunk for up to Hypothesis' five minutes; let that finish rather than time out."""
    for item in items:
        if item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.timeout(900))
