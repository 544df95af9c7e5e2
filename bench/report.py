"""The bench's figures as table rows (what ``tenantflow bench`` prints), as a JSON summary, and the JSON's rows
as the README's Markdown table (``python -m tenantflow.bench.report BENCH.json``)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tenantflow.bench.figures import Figures, percentile

NEEDS_LAB = "n/a: needs a lab (--lab-dir), real activities only"
ROW_KEYS = ("figure", "value", "target")


def machine() -> dict[str, Any]:
    """The cores and the load averages (1, 5 and 15 min) now: the figures move with the box's load."""
    return {"cpus": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()]}


def describe_machine(facts: dict[str, Any]) -> str:
    before, after = facts["before"], facts["after"]
    return (
        f"{before['cpus']} cores; load average (1/5/15 min) {'/'.join(map(str, before['load']))} before the bench, "
        f"{'/'.join(map(str, after['load']))} after"
    )


def markdown(facts: dict[str, Any]) -> str:
    """The rows of one ``tenantflow bench --output json`` run as a Markdown table, the machine's load below it."""
    lines = ["| figure | measured | target |", "|---|---|---|"]
    lines += [f"| {r['figure']} | {r['value'].replace('|', '/')} | {r['target']} |" for r in facts["rows"]]
    return "\n".join([*lines, "", f"Measured on {describe_machine(facts['machine'])}."])


def layer_calls(systems: dict[str, int]) -> str:
    return f"{sum(systems.values())} ({', '.join(f'{name} {n}' for name, n in systems.items())})"


def report_rows(f: Figures) -> list[tuple[str, str, str]]:
    """``(figure, value, target)`` rows, one or more per figure (a) to (e)."""
    rows: list[tuple[str, str, str]] = []
    if f.lab:
        outcome = "completed" if f.lab.run.ok else f"FAILED: {f.lab.run.message}"
        rows.append(("(a) one onboarding, lab, wall time", f"{f.lab.run.seconds:.2f} s ({outcome})", ""))
        for layer, systems in f.lab.api_calls.items():
            rows.append((f"(a) API calls: {layer}", layer_calls(systems), ""))
        total = sum(n for systems in f.lab.api_calls.values() for n in systems.values())
        rows.append(("(a) API calls: all layers", str(total), ""))
    else:
        rows.append(("(a) one onboarding, simulated, wall time", f"{f.solo.seconds:.2f} s ({f.latencies})", ""))
        rows.append(("(a) API calls per layer", NEEDS_LAB, ""))
    load = f.load
    rows += [
        (
            f"(b) {len(load.runs)} concurrent onboardings, one worker: throughput",
            f"{len(load.done) / load.wall_s:.2f} onboardings/s ({len(load.done)} in {load.wall_s:.1f} s)",
            "",
        ),
        (
            "(b) time to complete p50 / p95",
            f"{percentile(load.done, 0.5):.2f} s / {percentile(load.done, 0.95):.2f} s",
            "",
        ),
        ("(b) failures", str(len(load.failures)), "0"),
        ("(b) CPU per onboarding (worker + server) / floor", floor_row(f), "ratio <= 1.3"),
        ("(b) activities", f"simulated, {f.latencies}; {f.activity_slots} activity slots", ""),
    ]
    tax = f.durability_tax
    if f.lab and tax:
        durable, direct = (", ".join(f"{s:.1f}" for s in runs) for runs in (f.lab.durable_s, f.lab.direct_s))
        rows.append(
            (
                "(c) durability tax (Temporal / direct, lab)",
                f"{tax:.2f} (through Temporal {durable} s, direct {direct} s; "
                f"{f.lab.orchestration_s:.1f} s per run outside activities)",
                "<= 1.5",
            )
        )
        interval = f.lab.tax_interval
        if interval is not None:
            rows.append(("(c) durability tax, mean of A-B-B-A pairs", interval.describe(), "more pairs: --tax-pairs"))
    elif f.lab:
        rows.append(
            ("(c) durability tax (Temporal / direct, lab)", "n/a: a run failed: " + "; ".join(f.lab.failures), "<= 1.5")
        )
    else:
        rows.append(("(c) durability tax (Temporal / direct)", NEEDS_LAB, "<= 1.5"))
    rows.append(
        (
            "(d) history events per onboarding",
            f"{f.history_events} ({'lab run' if f.lab else 'simulated run'})",
            "<= 600",
        )
    )
    rows.append(
        (
            f"(e) gate latency p50 (update -> next activity start), {len(f.gate.gate_latencies_s)} runs",
            f"{f.gate_p50_ms:.0f} ms",
            "<= 250 ms",
        )
    )
    rows.append(
        (
            f"(e) gate latency p50 under the load of (b), {len(load.gate_latencies_s)} runs",
            f"{f.load_gate_p50_ms:.0f} ms",
            "",
        )
    )
    rows += drift_rows(f)
    rows += users_rows(f)
    if f.lab:
        rows.append(
            (
                "lab left clean",
                f"{'yes' if f.lab.cleaned_up else 'NO'}: {', '.join(f.lab.tenants)} "
                "offboarded, data purged (deactivated users kept)",
                "",
            )
        )
    rows.append(("worker logs", str(f.logs), ""))
    return rows


def floor_row(f: Figures) -> str:
    """tenantflow's CPU-seconds per onboarding under (b), the floor's for the same activities, and their ratio."""
    if f.load.cpu_s is None or f.floor_cpu_s is None or f.floor_ratio is None:
        return "n/a: the Temporal server does not run on this host (its CPU time is read from /proc)"
    return (
        f"{f.load.cpu_s:.2f} s / {f.floor_cpu_s:.2f} s = {f.floor_ratio:.2f} "
        "(floor: the same activities as no-ops on a default worker)"
    )


def drift_rows(f: Figures) -> list[tuple[str, str, str]]:
    """Figure (f): the lab tenant's check (with a lab) and the simulated fleet's."""
    fleet = f.fleet_drift
    lab = f.lab.drift if f.lab else None
    rows = [
        (
            "(f) drift check, one lab tenant",
            f"{lab.seconds:.2f} s ({'clean' if lab.clean else 'NOT clean: ' + lab.message})" if lab else NEEDS_LAB,
            "<= 2 s",
        )
    ]
    rows.append(
        (
            f"(f) drift check, {fleet.tenants} simulated tenants, {fleet.concurrency} at a time",
            f"{fleet.seconds:.1f} s ({fleet.checked} checked, {fleet.failed} failed)",
            "<= 60 s",
        )
    )
    return rows


def users_rows(f: Figures) -> list[tuple[str, str, str]]:
    """Figure (g): each tenant size's wall time and layers, the seconds per additional user, the attempts."""
    curve = f.users
    if curve is None:
        return [("(g) users curve", NEEDS_LAB, "")]
    rows = []
    for p in curve.points:
        layers = ", ".join(f"{layer} {s:.1f}" for layer, s in p.layer_s.items())
        outcome = "completed" if p.ok else f"FAILED: {p.message}"
        rows.append(
            (
                f"(g) {p.users} users: wall time without smoke jobs",
                f"{p.wall_without_smoke_s:.1f} s ({outcome}; seconds per layer: {layers})",
                "",
            )
        )
    per_user = ", ".join(f"{layer} {1000 * s:.1f} ms" for layer, s in curve.per_user_s.items())
    rows.append(("(g) seconds per additional user, by layer", per_user or "n/a: needs two sizes", ""))
    ratio = curve.wall_ratio
    rows.append(
        (
            "(g) largest / smallest tenant, wall time without smoke jobs",
            f"{ratio:.2f}" if ratio is not None else "n/a: needs two sizes",
            "<= 3",
        )
    )
    retried = [r for p in curve.points for r in p.retried]
    rows.append(
        (
            "(g) every activity on its first attempt",
            "yes" if curve.first_attempt else "NO: " + ", ".join(retried),
            "yes",
        )
    )
    return rows


def summary(f: Figures) -> dict[str, Any]:
    """Machine-readable figures; ``ok`` is false when an onboarding (simulated, through Temporal against the lab
    or direct) failed or the lab was not cleaned up."""
    load = f.load
    failures = [r.model_dump() for r in (*load.failures, *f.gate.failures)]
    lab: dict[str, Any] = {}
    if f.lab:
        lab = {
            "lab_run": f.lab.run.model_dump(),
            "api_calls": f.lab.api_calls,
            "durable_s": f.lab.durable_s,
            "durable_activity_s": f.lab.durable_activity_s,
            "direct_s": f.lab.direct_s,
            "orchestration_s": f.lab.orchestration_s,
            "lab_failures": f.lab.failures,
            "lab_tenants": f.lab.tenants,
            "lab_cleaned_up": f.lab.cleaned_up,
            "lab_drift": f.lab.drift.model_dump() if f.lab.drift else None,
            "durability_tax_interval": (
                f.lab.tax_interval.model_dump() | {"within_noise": f.lab.tax_interval.within_noise}
                if f.lab.tax_interval
                else None
            ),
            "activity_seconds": f.lab.activity_seconds,
            "direct_activity_seconds": f.lab.direct_activity_seconds,
        }
    return {
        "ok": not failures
        and f.solo.ok
        and not f.fleet_drift.failed
        and f.fleet_drift.checked == f.fleet_drift.tenants
        and (f.lab is None or (not f.lab.failures and f.lab.cleaned_up))
        and (f.users is None or f.users.ok),
        "latencies": f.latencies,
        "activity_slots": f.activity_slots,
        "logs": str(f.logs),
        "one_run_s": f.lab.run.seconds if f.lab else f.solo.seconds,
        "concurrent": len(load.runs),
        "throughput_per_s": len(load.done) / load.wall_s,
        "wall_s": load.wall_s,
        "p50_s": percentile(load.done, 0.5),
        "p95_s": percentile(load.done, 0.95),
        "failures": failures,
        "durability_tax": f.durability_tax,
        "history_events": f.history_events,
        "gate_latency_p50_ms": f.gate_p50_ms,
        "gate_latency_under_load_p50_ms": f.load_gate_p50_ms,
        "fleet_drift": f.fleet_drift.model_dump(),
        "cpu_per_onboarding_s": load.cpu_s,
        "floor_cpu_per_run_s": f.floor_cpu_s,
        "floor_ratio": f.floor_ratio,
        "users_curve": (
            f.users.model_dump()
            | {
                "per_user_s": f.users.per_user_s,
                "wall_ratio": f.users.wall_ratio,
                "first_attempt": f.users.first_attempt,
            }
            if f.users
            else None
        ),
        **lab,
    }


if __name__ == "__main__":
    with open(sys.argv[1]) as source:
        print(markdown(json.load(source)))
