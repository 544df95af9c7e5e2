"""Where the lab's in-process stand-ins keep their state between ``lab down`` and ``lab up``: one JSON file each.

slapd and the Slurm database keep their own data in the state folder; the Authentik, Weka and
Kubernetes emulators live in ``lab serve``'s memory, so :func:`keep_saved` writes each of them to
``DIR/state/<name>.json`` whenever it changed (checked every :data:`SAVE_INTERVAL_S`) and once more
when the lab stops, and ``lab serve`` restores them from there at start. Every write is atomic (a
temporary file in the same folder, fsynced, renamed over the old one) and mode 0600: the files hold
credentials (Authentik password hashes, Weka passwords and tokens, Kubernetes Secrets).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SAVE_INTERVAL_S = 3.0
"""Each save dumps and fsyncs a whole stand-in; at 0.25 s the session lab's saves were a tenth of its busy CPU
during onboardings, and still a tenth at 1 s (py-spy of ``lab serve`` during the rollback tests: the kube stores
grow with every run's records). ``lab down`` saves once more after its servers stop, so only a killed
``lab serve`` loses the writes of its last seconds."""


def state_file(state_dir: Path, name: str) -> Path:
    return state_dir / "state" / f"{name}.json"


def load(path: Path) -> dict[str, Any] | None:
    """The state saved in ``path``, or None when there is none yet."""
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename: a reader sees the old or the new file, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@dataclass
class Saved:
    """One stand-in's state file: ``dump`` gives its state; ``revision``, when given, changes whenever it does
    (a cheaper check than comparing dumps)."""

    path: Path
    dump: Callable[[], dict[str, Any]]
    revision: Callable[[], object] | None = None
    _last: object = field(default=None, init=False)

    def save_if_changed(self) -> bool:
        revision = self.revision() if self.revision is not None else None
        if revision is not None and revision == self._last:
            return False
        text = json.dumps(self.dump(), sort_keys=True)
        key = revision if revision is not None else text
        if key == self._last:
            return False
        write_atomic(self.path, text)
        self._last = key
        return True


async def keep_saved(saved: list[Saved], stop: asyncio.Event, interval_s: float = SAVE_INTERVAL_S) -> None:
    """Save every changed stand-in each ``interval_s`` until ``stop`` is set (the final save is the caller's,
    after its servers have stopped taking writes)."""
    while not stop.is_set():
        for item in saved:
            try:
                item.save_if_changed()
            except OSError:
                log.exception("saving %s failed; retrying", item.path)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval_s)
