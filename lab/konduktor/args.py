"""The stand-in's command line: root ``--kubeconfig``/``--context``/``--version`` before ``cluster``/``worker``
commands, and its prompts. Kept free of the client libraries, so that ``--help`` and ``--version`` answer before
they load, as a CLI's eager options do (:mod:`lab.konduktor.__main__`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tenantflow.lab.konduktor.facts import VERSION

PROMPT = "Apply this plan? [y/N]"
TABLE_PROMPT = "Proceed with bootstrap of this worker? (y/n): "
"""The second dialect's prompt: no newline after it, the answer is read on the same line."""
DIALECT_ENV = "KONDUKTOR_LAB_DIALECT"
"""Which output the stand-in speaks (the package docstring): ``runbook`` (the default), ``table`` or ``quiet``."""
DIALECTS = ("runbook", "table", "quiet")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="konduktor", description="lab stand-in for the Konduktor CLI")
    root.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    root.add_argument("--context", help="kubeconfig context (default: the current context)")
    root.add_argument("--version", action="version", version=VERSION)
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
    bootstrap = worker.add_parser("bootstrap", description="Install the worker components with a one-shot blob.")
    if os.environ.get(DIALECT_ENV) == "table":
        bootstrap.add_argument("blob", help="the one-shot bootstrap blob printed by `cluster enroll`")
    else:
        given = bootstrap.add_mutually_exclusive_group(required=True)
        given.add_argument("blob", nargs="?", help="the blob itself (the runbook's form: it shows in the process list)")
        given.add_argument("--blob-file", type=Path, help="a file holding the blob, readable by its owner only")
    worker.add_parser("reset").add_argument("--dry-run", action="store_true")
    return root
