"""The runbook's "What could go wrong" items as lab switches, one each, read live by the lab's daemons.

``<state_dir>/pitfalls.json`` lists the switched-on pitfalls (``python -m tenantflow.lab.pitfalls NAME on|off
--state-dir DIR`` and the tests write it; every daemon reads it on each use, so a switch takes effect without
restarting the lab). Each pitfall is injected
where it happens on a real cluster, never in tenantflow's code, which cannot read this file:

* ``gid_mismatch``: the slurmd pods' nsscache sidecar publishes every user and group with another gid (a
  different gidNumber property mapping on the Slurm side); the login pod's nslcd still reads the outpost.
* ``wrong_node_labels``: the SUNK chart labels the tenant's NodeSet (slurmd) pods ``tenant=<slug>`` instead
  of ``app.kubernetes.io/managed-by=<slug>``, so the ReservationBinding does not select them.
* ``no_constrain_devices``: cgroup.conf lacks ``ConstrainDevices=yes``: every job and step sees all 8 GPUs
  (the ``nvidia-smi`` stand-in with ``LAB_CONSTRAIN_DEVICES=no``).
* ``acs_on``: PCIe ACS left on: the nodes' all-reduce reaches a third of the tier (``LAB_NCCL_BUSBW_GBPS``).
* ``scratch_missing``: the NodeSet template lacks the Weka volumeMount: jobs see no ``wekafs`` mount table.
* ``short_max_time``: the Slurm chart's partition template forces ``MaxTime=12:00:00`` on every partition.
* ``evict_on_release``: the reservation operator defaults ``evictOnRelease`` to true on every Reservation.
* ``keys_empty``: the ssh_keys sync has not run: the login pod's ``authorized_keys.d`` is empty.
* ``mig_on``: MIG left enabled on the GPU nodes: ``nvidia-smi -L`` lists two indented ``MIG 3g.40gb`` devices
  under each GPU (NVIDIA's MIG user guide), the ``nvidia-smi`` stand-in with ``LAB_MIG=on``.
* ``outpost_throttled``: the LDAP outpost throttles the login pod's nslcd: every lookup is answered busy, so
  ``getent`` finds nothing (the runbook's first-wave rate limit, lasting).
"""

from __future__ import annotations

import argparse
import json
from enum import StrEnum
from pathlib import Path


class Pitfall(StrEnum):
    gid_mismatch = "gid_mismatch"
    wrong_node_labels = "wrong_node_labels"
    no_constrain_devices = "no_constrain_devices"
    acs_on = "acs_on"
    scratch_missing = "scratch_missing"
    short_max_time = "short_max_time"
    evict_on_release = "evict_on_release"
    keys_empty = "keys_empty"
    outpost_throttled = "outpost_throttled"
    mig_on = "mig_on"


INJECTED: dict[Pitfall, str] = {
    Pitfall.gid_mismatch: "slurmd pods' nsscache publishes every gidNumber + 1 (another property mapping)",
    Pitfall.wrong_node_labels: "SUNK chart labels NodeSet pods tenant=<slug>, not app.kubernetes.io/managed-by",
    Pitfall.no_constrain_devices: "no ConstrainDevices: nvidia-smi stand-in shows all 8 GPUs to a 1-GPU job",
    Pitfall.acs_on: "nodes' all_reduce_perf busbw = LAB_NCCL_BUSBW_GBPS 65 (ACS on: a third of 195)",
    Pitfall.scratch_missing: "NodeSet pods without the Weka volumeMount (no wekafs mount table in jobs)",
    Pitfall.short_max_time: "Slurm chart's partition template forces MaxTime=12:00:00",
    Pitfall.evict_on_release: "reservation operator defaults spec.evictOnRelease to true",
    Pitfall.keys_empty: "ssh_keys sync never ran: login pod's /etc/ssh/authorized_keys.d is empty",
    Pitfall.outpost_throttled: "LDAP outpost answers the login pod's nslcd lookups busy (rate limit)",
    Pitfall.mig_on: "MIG enabled: nvidia-smi -L lists MIG devices under every GPU",
}
ACS_ON_BUSBW_GBPS = "65.0"
SHORT_MAX_TIME = "12:00:00"
GID_DRIFT = 1


def path(state_dir: Path) -> Path:
    return state_dir / "pitfalls.json"


def active(state_dir: Path | None) -> frozenset[Pitfall]:
    """The switched-on pitfalls (none without a state folder or file)."""
    if state_dir is None or not path(state_dir).exists():
        return frozenset()
    return frozenset(Pitfall(name) for name in json.loads(path(state_dir).read_text() or "[]"))


def is_on(state_dir: Path | None, pitfall: Pitfall) -> bool:
    return pitfall in active(state_dir)


def switch(state_dir: Path, pitfall: Pitfall, on: bool) -> None:
    """Switch one pitfall on or off."""
    names = set(active(state_dir)) - {pitfall} | ({pitfall} if on else set())
    tmp = path(state_dir).with_suffix(".tmp")
    tmp.write_text(json.dumps(sorted(names)))
    tmp.replace(path(state_dir))


def main(argv: list[str] | None = None) -> None:
    """Switch one pitfall of a running lab on or off and print the ones now on."""
    parser = argparse.ArgumentParser(prog="python -m tenantflow.lab.pitfalls", description=__doc__.split("\n")[0])
    parser.add_argument("pitfall", choices=[p.value for p in Pitfall])
    parser.add_argument("state", choices=["on", "off"])
    parser.add_argument("--state-dir", type=Path, default=Path(".state/lab"))
    args = parser.parse_args(argv)
    switch(args.state_dir, Pitfall(args.pitfall), args.state == "on")
    print("on:", ", ".join(sorted(active(args.state_dir))) or "none")


if __name__ == "__main__":
    main()
