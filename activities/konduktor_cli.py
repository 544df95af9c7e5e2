"""Running the ``konduktor`` CLI as the enroll-worker-cluster runbook documents it.

Every call names its target explicitly: ``konduktor --kubeconfig PATH --context CTX <command>`` (root flags
before the subcommand), never the current context. The binary comes from the worker's ``KONDUKTOR_BIN``
setting (default ``konduktor`` on PATH). A failure raises a non-retryable ``KonduktorFailed`` whose message
holds the command with every secret argument replaced by ``<secret>``, and the CLI's stderr with the same
redaction; the CLI's own exceptions (which would print the full argv) never escape.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from tenantflow.activities.errors import fail
from tenantflow.activities.settings import settings
from tenantflow.models.targets import KubeTarget

CLI_TIMEOUT_S = 120.0
PROMPT = "Apply this plan? [y/N]"
REDACTED = "<secret>"


@dataclass(frozen=True)
class Secret:
    """An argument the CLI needs that must appear in no message (the bootstrap blob)."""

    value: str


Arg = str | Secret


def argv(target: KubeTarget, *args: Arg) -> list[Arg]:
    return [settings().konduktor_bin, "--kubeconfig", target.kubeconfig, "--context", target.context, *args]


def _plain(args: list[Arg]) -> list[str]:
    return [a.value if isinstance(a, Secret) else a for a in args]


def redact(text: str, args: list[Arg]) -> str:
    for arg in args:
        if isinstance(arg, Secret) and arg.value:
            text = text.replace(arg.value, REDACTED)
    return text


def shown(args: list[Arg]) -> str:
    """The command line as messages show it."""
    return " ".join(REDACTED if isinstance(a, Secret) else a for a in args)


def _failed(args: list[Arg], what: str, stderr: str = "") -> Exception:
    detail = redact(stderr.strip(), args)
    return fail("KonduktorFailed", f"`{shown(args)}` {what}" + (f": {detail}" if detail else ""))


def run(target: KubeTarget, *args: Arg, stdout: IO[str] | None = None, timeout_s: float = CLI_TIMEOUT_S) -> str:
    """Run one command; its stdout (or write it to ``stdout``); ``KonduktorFailed`` on a non-zero exit."""
    command = argv(target, *args)
    try:
        proc = subprocess.run(
            _plain(command),
            stdout=stdout or subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _failed(command, f"did not finish within {timeout_s:.0f} s") from None
    except OSError as exc:
        raise _failed(command, f"could not start ({exc.strerror}); set KONDUKTOR_BIN") from None
    if proc.returncode != 0:
        raise _failed(command, f"exited {proc.returncode}", proc.stderr)
    return redact(proc.stdout or "", command)


def answer_plan(
    target: KubeTarget, *args: Arg, approve: Callable[[list[str]], bool], timeout_s: float = CLI_TIMEOUT_S
) -> list[str]:
    """Run a command that prints a plan and asks :data:`PROMPT`; answer ``y`` only if ``approve(plan)``.

    Returns the plan lines followed by the command's remaining output. Raises ``KonduktorFailed`` when the
    command fails or never asks.
    """
    command = argv(target, *args)
    try:
        proc = subprocess.Popen(
            _plain(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    except OSError as exc:
        raise _failed(command, f"could not start ({exc.strerror}); set KONDUKTOR_BIN") from None
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        plan: list[str] = []
        for line in proc.stdout:
            if line.strip() == PROMPT:
                break
            if line.strip():
                plan.append(redact(line.rstrip("\n"), command))
        else:
            _, err = proc.communicate()
            raise _failed(command, f"exited {proc.returncode} without asking to apply a plan", err)
        ok = approve(plan)
        out, err = proc.communicate(input="y\n" if ok else "n\n")
    finally:
        timer.cancel()
    if not ok:
        return plan
    if proc.returncode != 0:
        raise _failed(command, f"exited {proc.returncode}", err)
    return plan + [redact(line, command) for line in out.splitlines() if line.strip()]
