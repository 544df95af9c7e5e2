"""The stand-in's commands run: the parsed command line (:mod:`lab.konduktor.args`) against the emulated clusters."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

from tenantflow.lab.konduktor import hub_commands, worker_commands
from tenantflow.lab.konduktor.args import DIALECT_ENV, DIALECTS, PROMPT, TABLE_PROMPT, parser
from tenantflow.lab.konduktor.blob import BlobError
from tenantflow.lab.konduktor.rest import CommandError, Rest


def dialect() -> str:
    """The dialect :data:`DIALECT_ENV` names; a usage error for an unknown one."""
    chosen = os.environ.get(DIALECT_ENV) or "runbook"
    if chosen not in DIALECTS:
        raise CommandError(f"{DIALECT_ENV}={chosen}: not one of {', '.join(DIALECTS)}")
    return chosen


def confirm(plan: list[str]) -> bool:
    """Show ``plan`` and ask; the second dialect (``table``) leaves its prompt open on the line it reads from."""
    if os.environ.get(DIALECT_ENV) == "table":
        print("\n".join(plan) + "\n", flush=True)
        print(TABLE_PROMPT, end="", flush=True)
    else:
        print("\n".join(plan) + "\n\n" + PROMPT, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def read_blob(path: Path) -> str:
    """The blob in ``path``, refused (like ssh refuses a key) unless only its owner can read it."""
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise CommandError(f"--blob-file {path}: mode {stat.S_IMODE(mode):o} lets others read it; chmod 600 it")
        return path.read_text().strip()
    except OSError as exc:
        raise CommandError(f"--blob-file {path}: {exc.strerror}") from None


def reset(api: Rest, dry_run: bool) -> list[str]:
    """``worker reset [--dry-run]`` in the dialect :data:`DIALECT_ENV` names; ``quiet`` prints its dry run on stderr
    only."""
    spoken = dialect()
    lines = worker_commands.reset(api, dry_run, table=spoken == "table")
    if spoken == "quiet" and dry_run:
        print("\n".join(lines), file=sys.stderr, flush=True)
        return []
    return lines


def run(args: argparse.Namespace) -> list[str]:
    if args.group == "cluster" and args.command == "decommission" and not args.yes:
        parser().error("cluster decommission removes the Hub enrollment; pass --yes to confirm")
    api = Rest(args.kubeconfig, args.context)
    if args.group == "worker":
        if args.command == "bootstrap":
            blob_file = getattr(args, "blob_file", None)
            the_blob = args.blob if blob_file is None else read_blob(blob_file)
            return worker_commands.bootstrap(api, the_blob, confirm, table=dialect() == "table")
        return reset(api, args.dry_run)
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
    if lines:
        print("\n".join(lines), flush=True)
    if lines and lines[-1].startswith("bootstrap aborted"):
        raise SystemExit(1)
