"""Smoke-test output parsing (job runs as a tenant user do not work in the lab yet: see the report)."""

from __future__ import annotations

from activities import smoke


def test_parse_busbw_picks_the_4gb_row() -> None:
    out = "#  size count\n  2147483648  536870912 float sum -1 1.0 97.50 97.50 0\n" \
          "  4294967296  1073741824 float sum -1 1.0 60.00 112.50 0 1.0 60.0 112.5 0\n"
    assert smoke.parse_busbw(out) == 112.5
    assert smoke.parse_busbw("no table") is None
