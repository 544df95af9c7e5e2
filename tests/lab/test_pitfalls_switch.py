"""The lab's pitfall switches: one file in the state folder, switched one pitfall at a time."""

from __future__ import annotations

from pathlib import Path

from tenantflow.lab import pitfalls
from tenantflow.lab.pitfalls import Pitfall


def test_switches_are_independent_and_read_live(tmp_path: Path) -> None:
    assert pitfalls.active(tmp_path) == frozenset() and pitfalls.active(None) == frozenset()
    pitfalls.main(["acs_on", "on", "--state-dir", str(tmp_path)])
    pitfalls.switch(tmp_path, Pitfall.keys_empty, True)
    assert pitfalls.active(tmp_path) == {Pitfall.acs_on, Pitfall.keys_empty}
    pitfalls.main(["acs_on", "off", "--state-dir", str(tmp_path)])
    assert pitfalls.active(tmp_path) == {Pitfall.keys_empty}
    assert set(pitfalls.INJECTED) == set(Pitfall)
