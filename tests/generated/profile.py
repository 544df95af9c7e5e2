"""The Hypothesis profile of the generated-contract tests: a bounded, derandomized run that replays.

``derandomize`` draws the same examples on every run, so a failure in CI fails the same way on a laptop, and
Hypothesis prints the falsifying contract (and ``print_blob`` the ``@reproduce_failure`` line). More examples for
a deeper local search: ``TENANTFLOW_HYPOTHESIS_EXAMPLES=2000 pytest tests/generated``; a fresh random search
instead of the fixed one: ``HYPOTHESIS_PROFILE=explore``. The ``mutation`` profile is the small one
bench/mutation.py runs once per mutant (it sets ``HYPOTHESIS_PROFILE=mutation``): ten examples, and a failure is
reported as found, without shrinking.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

EXAMPLES = int(os.environ.get("TENANTFLOW_HYPOTHESIS_EXAMPLES", "60"))
COMMON = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
PROFILES = {
    "generated": settings(max_examples=EXAMPLES, derandomize=True, **COMMON),
    "explore": settings(max_examples=EXAMPLES, derandomize=False, **COMMON),
    "mutation": settings(
        max_examples=10, derandomize=True, phases=[Phase.explicit, Phase.reuse, Phase.generate], **COMMON
    ),
}
GENERATED = PROFILES[os.environ.get("HYPOTHESIS_PROFILE", "generated")]
"""The settings every test here runs under (a decorator on each): applied per test, not loaded as Hypothesis'
default profile, so the suite's other property tests (the API fuzzing) keep their own."""
