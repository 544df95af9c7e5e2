"""The Hypothesis profile of the generated-contract tests: a bounded, derandomized run that replays.

``derandomize`` draws the same examples on every run, so a failure in CI fails the same way on a laptop, and
Hypothesis prints the falsifying contract (and ``print_blob`` the ``@reproduce_failure`` line). More examples for
a deeper local search: ``TENANTFLOW_HYPOTHESIS_EXAMPLES=2000 pytest tests/generated``; a fresh random search
instead of the fixed one: ``HYPOTHESIS_PROFILE=explore``. The ``mutation`` profile is the small one
bench/mutation.py runs once per mutant: ten examples, and a failure is reported as found, without shrinking.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

EXAMPLES = int(os.environ.get("TENANTFLOW_HYPOTHESIS_EXAMPLES", "60"))
COMMON = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

settings.register_profile("generated", max_examples=EXAMPLES, derandomize=True, **COMMON)
settings.register_profile("explore", max_examples=EXAMPLES, derandomize=False, **COMMON)
settings.register_profile(
    "mutation", max_examples=10, derandomize=True, phases=[Phase.explicit, Phase.reuse, Phase.generate], **COMMON
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "generated"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A failing example is shrunk for up to Hypothesis' five minutes; let that finish rather than time out."""
    for item in items:
        if item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.timeout(900))
