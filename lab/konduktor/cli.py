"""Argument parsing of the stand-in: root ``--kubeconfig``/``--context`` before ``cluster``/``worker`` commands."""

from __future__ import annotations

import argparse
import sys

from tenantflow.lab.konduktor import hub_commands, worker_commands
from tenantflow.lab.konduktor.blob import BlobError
from tenantflow.lab.konduktor.rest import CommandError, Rest

PROMPT = "Apply this plan? [y/N]"


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="konduktor", description="lab stand-in for the Konduktor CLI")
    root.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    root.add_argument("--context", help="kubeconfig context (default: the current context)")
    groups = root.add_subparsers(dest="group", required=True)
    cluster = groups.add_parser("cluster").add_subparsers(dest="command", required=True)
    for name in ("enroll", "status", "cordon", "decommission"):
        sub = cluster.add_parser(name)
        sub.add_argument("worker")
        sub.add_argument("-n", "--ns", "--namespace", dest="namespace", required=True)
        if name == "cordon":
            sub.add_argument("--uncordon", action="store_true")
        if name == "decommission":
            sub.add_argument("--yes", action="store_true", help="required: confirm removing the Hub enrollment")
    worker = groups.add_parser("worker").add_subparsers(dest="command", required=True)
    worker.add_parser("bootstrap").add_argument("blob")
    worker.add_parser("reset").add_argument("--dry-run", action="store_true")
    return root


def confirm(plan: list[str]) -> bool:
    print("\n".join(plan) + "\n\n" + PROMPT, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run(args: argparse.Namespace) -> list[str]:
    if args.group == "cluster" and args.command == "decommission" and not args.yes:
        parser().error("cluster decommission removes the Hub enrollment; pass --yes to confirm")
    api = Rest(args.kubeconfig, args.context)
    if args.group == "worker":
        if args.command == "bootstrap":
            return worker_commands.bootstrap(api, args.blob, confirm)
        return worker_commands.reset(api, args.dry_run)
    if args.command == "enroll":
        return [hub_commands.enroll(api, args.worker, args.namespace)]
    if args.command == "status":
        return hub_commands.status(api, args.worker, args.namespace)
    if args.command == "cordon":
        return [hub_commands.cordon(api, args.worker, args.namespace, not args.uncordon)]
    return hub_commands.decommission(api, args.worker, args.namespace)


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        lines = run(args)
    except (CommandError, BlobError) as exc:
        print(f"konduktor: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    print("\n".join(lines), flush=True)
    if lines and lines[-1].startswith("bootstrap aborted"):
        raise SystemExit(1)
