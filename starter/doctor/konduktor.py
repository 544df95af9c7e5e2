"""The konduktor CLI the enrollment steps run: its version, or why it was not asked.

``KONDUKTOR_BIN --version`` (Konduktor's CLI is a Click application, whose ``--version`` option prints
``<prog>, version <v>``: https://click.palletsprojects.com/en/stable/api/#click.version_option; Konduktor,
https://github.com/Trainy-ai/konduktor). Without ``KONDUKTOR_BIN`` in the worker's settings, enrollment is not
configured: skipped with that reason.
"""

from __future__ import annotations

import os
import subprocess

from tenantflow.activities.common.settings import settings
from tenantflow.starter.doctor.report import Estate, Result, failed, ok, skipped

NAME = "konduktor.cli"
GRANT = "the worker's user execute permission on KONDUKTOR_BIN"
TIMEOUT_S = 20.0


def konduktor_version(_: Estate) -> Result:
    """The version ``KONDUKTOR_BIN --version`` prints."""
    if "KONDUKTOR_BIN" not in os.environ:
        return skipped(NAME, "KONDUKTOR_BIN unset", "enrollment is not configured")
    binary = settings().konduktor_bin
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return failed(NAME, f"KONDUKTOR_BIN={binary} cannot run: {exc}", "install the konduktor CLI there")
    text = (done.stdout.strip() or done.stderr.strip()).splitlines()
    if done.returncode != 0 or not text:
        return failed(
            NAME,
            f"`{binary} --version` exited {done.returncode}: {text[-1] if text else 'no output'}",
            "install a konduktor CLI that answers --version",
        )
    return ok(NAME, f"{text[0]} ({binary})")
