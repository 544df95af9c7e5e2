"""The tenant's Slurm partition: the wait until slurmctld serves a changed line, and the check of what it serves.

Where the line is written is the chosen backend's business (:mod:`activities.slurm.partition_backends`:
a ConfigMap key a self-managed slurm.conf includes, or Slinky's ``Controller.spec.extraConf``). Either way an
operator renders it into a file slurmctld reads, and the kubelet brings a changed ConfigMap volume into the
slurmctld pod after its sync period plus its cache TTL, often 60-90 s
(https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically).
Nothing of ours marks when that happened, so after a write :func:`confirm_partition` reads the files slurmctld
reads (``SLURM_CONF`` from ``scontrol show config`` and what it ``Include``s, with ``cat`` in the slurmctld
container) until they show the change; then, unless the backend's platform applies the change itself (Slinky's
reconfigure sidecar or pod restart), runs ``scontrol reconfigure`` once ("instruct all Slurm daemons to re-read
the configuration file", https://slurm.schedmd.com/scontrol.html; from Slurm 23.11 it restarts slurmctld, so it is
never repeated on a shared controller); then polls ``scontrol show partition`` only until slurmctld reports the
partition with the wanted nodes (or, after a removal, no longer knows it), all within ``SLURM_PARTITION_BUDGET_S``,
heartbeating. Then :func:`partition_problems` compares what slurmctld reports (Nodes, MaxTime, AllowAccounts,
OverSubscribe, ...) with the contract. The partition's ``AllowAccounts`` lists the tenant account and its team
sub-account, because Slurm matches job accounts exactly and users submit under the sub-account.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import PurePosixPath

from temporalio import activity

from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.polling import from_poll_interval, poll_until
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.slurm_cli import (
    UNAVAILABLE_PATTERNS,
    Partition,
    SlurmCtl,
    command_error,
    parse_partition,
    same_duration,
    word,
)
from tenantflow.activities.slurm.partition_backends import PartitionBackend, read
from tenantflow.activities.slurm.wants import allow_accounts
from tenantflow.models.hostlist import compress_hostlist, expand_hostlist
from tenantflow.models.tenant import TenantContract

RESTART_GRACE_S = 30.0
"""How long slurmctld may not answer after ``scontrol reconfigure`` (from Slurm 23.11 a restart, seconds on a
sound configuration) before the step fails with the command's retryable error."""
MAX_TIME_FIX = (
    "set MaxTime=UNLIMITED (or at least the contract's wall limit) in the partition definition and "
    "tell the tenant the wall limit at handover"
)


def live_partition(ctl: SlurmCtl, c: TenantContract) -> Partition | None:
    """``scontrol show partition <slug>`` as slurmctld reports it; None when it does not know the partition."""
    out = ctl.run(["scontrol", "show", "partition", word(c.slug)], check=False)
    return parse_partition(out.stdout) if out.exit_code == 0 else None


def line_nodes(line: str | None) -> list[str] | None:
    """The nodes of a ``PartitionName=`` line (None for no line: the partition should not exist)."""
    if line is None:
        return None
    value = next((t.split("=", 1)[1] for t in line.split() if t.startswith("Nodes=")), "")
    return sorted(expand_hostlist(value)) if value else []


def reports(part: Partition | None, nodes: list[str] | None) -> bool:
    """``part`` (what slurmctld reports) has exactly ``nodes``; with None, the partition is gone."""
    return part is None if nodes is None else part is not None and sorted(part.nodes) == sorted(nodes)


def confirm_budget_s() -> float:
    """``SLURM_PARTITION_BUDGET_S``, kept 30 s inside what is left of the attempt's start-to-close timeout (a
    restore after a failed wait gets the rest, not a second full budget)."""
    budget = settings().slurm_partition_budget_s
    info = activity.info() if activity.in_activity() else None
    if info is None or info.start_to_close_timeout is None:
        return budget
    left = info.started_time + info.start_to_close_timeout - datetime.now(UTC)
    return max(min(budget, left.total_seconds() - 30), 1.0)


def config_files(ctl: SlurmCtl) -> list[str]:
    """slurm.conf as the slurmctld container reads it (``SLURM_CONF`` of ``scontrol show config``) and the
    files it ``Include``s, a relative one from slurm.conf's folder (https://slurm.schedmd.com/slurm.conf.html,
    Include)."""
    conf = ctl.config().get("SLURM_CONF", "")
    if not conf.startswith("/"):
        raise fail("Invalid", f"scontrol show config names no slurm.conf (SLURM_CONF={conf!r})")
    text = ctl.run(["cat", conf]).stdout
    folder = PurePosixPath(conf).parent
    included = [str(folder / m) for m in re.findall(r"(?im)^[ \t]*include[ \t]+(\S+)", text)]
    return [conf, *included]


def configured_nodes(text: str, slug: str) -> list[str] | None:
    """The nodes of partition ``slug`` in configuration ``text`` (None when no line defines it); keywords are
    case-insensitive, the name is not."""
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or not tokens[0].lower().startswith("partitionname="):
            continue
        fields = {key.lower(): value for key, _, value in (t.partition("=") for t in tokens)}
        if fields["partitionname"] == slug:
            nodes = fields.get("nodes", "")
            return sorted(expand_hostlist(nodes)) if nodes else []
    return None


def confirm_partition(
    ctl: SlurmCtl,
    c: TenantContract,
    nodes: list[str] | None,
    backend: PartitionBackend,
    budget_s: float | None = None,
) -> Partition | None:
    """Wait until slurmctld's configuration files define the partition with ``nodes`` (None: no longer define
    it), run ``scontrol reconfigure`` once unless ``backend``'s platform does, then read the partition back until
    slurmctld reports it so; a timeout error naming what the files or slurmctld still show."""
    budget = confirm_budget_s() if budget_s is None else budget_s
    deadline = time.monotonic() + budget
    want = None if nodes is None else sorted(nodes)
    target = "to be gone" if want is None else f"with Nodes={compress_hostlist(want)}"
    files = config_files(ctl)

    def in_files() -> list[str] | None:
        return configured_nodes(ctl.run(["cat", *files]).stdout, c.slug)

    observed = poll_until(
        in_files,
        lambda got: got == want,
        every=from_poll_interval(),
        budget_s=budget,
        detail=lambda got: f"waiting for {', '.join(files)} to show partition {c.slug} {target}",
    )
    if not observed.done:
        seen = "no such partition" if observed.value is None else f"Nodes={compress_hostlist(observed.value)}"
        raise fail(
            "Timeout",
            f"slurmctld's configuration ({', '.join(files)}) still shows {seen} for partition {c.slug} "
            f"{budget:.0f} s after {backend.where(c)} changed (want it {target}); check that the Slurm "
            f"operator renders it into those files and its logs ({backend.name} backend), or raise "
            "SLURM_PARTITION_BUDGET_S",
        )
    if not backend.reconfigures(c):
        ctl.run(["scontrol", "reconfigure"])
    waited = poll_until(
        restarted_partition(ctl, c),
        lambda part: reports(part, nodes),
        every=from_poll_interval(),
        budget_s=max(deadline - time.monotonic(), RESTART_GRACE_S),
        detail=lambda part: f"waiting for slurmctld to report partition {c.slug} {target}",
    )
    if not waited.done:
        seen = "no such partition" if waited.value is None else f"Nodes={waited.value.get('Nodes')}"
        raise fail(
            "Timeout",
            f"slurmctld still reports {seen} for partition {c.slug} after the reconfigure although "
            f"{files[0]} and its includes define it {target}; check slurmctld's log for errors in the "
            "configuration",
        )
    return waited.value


def restarted_partition(ctl: SlurmCtl, c: TenantContract) -> Callable[[], Partition | None]:
    """A probe of the partition slurmctld reports after a reconfigure, which from Slurm 23.11 restarts it: while
    it does not answer (:data:`UNAVAILABLE_PATTERNS`) the probe reports a partition without nodes (neither gone
    nor the wanted one), and after :data:`RESTART_GRACE_S` of silence it raises the command's retryable error."""
    argv = ["scontrol", "show", "partition", word(c.slug)]
    silent: list[float] = []

    def probe() -> Partition | None:
        out = ctl.run(argv, check=False)
        if out.exit_code == 0 or not UNAVAILABLE_PATTERNS.search(f"{out.stderr}\n{out.stdout}"):
            silent.clear()
            return parse_partition(out.stdout) if out.exit_code == 0 else None
        silent.append(time.monotonic())
        if silent[-1] - silent[0] > RESTART_GRACE_S:
            raise command_error(argv, out)
        return Partition(name=c.slug, fields={})

    return probe


def partition_problems(ctl: SlurmCtl, c: TenantContract, nodes: list[str]) -> list[str]:
    """How the live partition differs from the contract (empty when it matches)."""
    part = live_partition(ctl, c)
    if part is None:
        return [f"partition {c.slug} is not known to slurmctld"]
    problems = []
    if sorted(part.nodes) != sorted(nodes):
        problems.append(f"Nodes={part.get('Nodes')} but the Reservation holds {compress_hostlist(nodes)}")
    checks = {
        "AllowAccounts": ",".join(allow_accounts(c)),
        "Default": "NO",
        "State": "UP",
        "PreemptMode": "OFF",
        "OverSubscribe": c.slurm.oversubscribe.value,
    }
    problems += [
        f"{k}={part.get(k)}, want {v}"
        for k, v in checks.items()
        if sorted(part.get(k).split(",")) != sorted(v.split(","))
    ]
    if not same_duration(c.slurm.partition_default_time, part.get("DefaultTime")):
        problems.append(f"DefaultTime={part.get('DefaultTime')}, want {c.slurm.partition_default_time}")
    if not same_duration(c.slurm.partition_max_time, part.get("MaxTime")):
        problems.append(
            f"slurm.max_time: MaxTime={part.get('MaxTime')}, want {c.slurm.partition_max_time} (fix: {MAX_TIME_FIX})"
        )
    return problems


def restore_partition(ctl: SlurmCtl, c: TenantContract, previous: str | None, backend: PartitionBackend) -> bool:
    """Put the tenant's line in ``backend`` back to ``previous`` and confirm slurmctld reports it; False when both
    already held it. A line already back is not enough: an attempt that wrote it and died before the reconfigure
    left slurmctld serving the tenant's partition."""
    if read(backend, c) == previous and reports(live_partition(ctl, c), line_nodes(previous)):
        return False
    backend.write(c, previous)
    confirm_partition(ctl, c, line_nodes(previous), backend)
    return True
