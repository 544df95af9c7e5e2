"""The ``konduktor`` executable ``lab up`` puts on the worker's PATH: a shell wrapper around the stand-in."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path


def write_wrapper(bin_dir: Path) -> Path:
    """Write ``bin_dir/konduktor`` (mode 0755), running this interpreter's stand-in; return its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "konduktor"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m tenantflow.lab.konduktor "$@"\n')
    script.chmod(0o755)
    return script
