"""Slurm durations (``24:00:00``, ``1-00:00:00``, ``90``, ``UNLIMITED``) in minutes, as Slurm reads them.

The forms are those of ``sbatch --time`` and slurm.conf's ``MaxTime``/``DefaultTime``
(https://slurm.schedmd.com/sbatch.html#OPT_time): ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
``days-hours``, ``days-hours:minutes``, ``days-hours:minutes:seconds``, and ``UNLIMITED``/``INFINITE``. Seconds
round up to the next minute, as Slurm's ``time_str2mins`` (src/common/parse_time.c) rounds them.
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def duration_minutes(value: str) -> int | None:
    """``value`` in minutes; None for unlimited (and for the empty value Slurm prints for an unset limit)."""
    value = value.strip()
    if value.upper() in ("UNLIMITED", "INFINITE", ""):
        return None
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(f"{value!r} is not a Slurm duration")
    days, first, second, third = (int(g) if g is not None else None for g in match.groups())
    assert first is not None
    if days is not None:
        hours, minutes, seconds = first, second or 0, third or 0
    elif third is not None:
        hours, minutes, seconds = first, second or 0, third
    elif second is not None:
        hours, minutes, seconds = 0, first, second
    else:
        hours, minutes, seconds = 0, first, 0
    return ((days or 0) * 24 + hours) * 60 + minutes + (1 if seconds else 0)


def longer(a: int | None, b: int | None) -> bool:
    """Whether ``a`` minutes is longer than ``b`` (None is unlimited, longer than any number)."""
    return b is not None and (a is None or a > b)
