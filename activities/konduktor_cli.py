"""Running the ``konduktor`` CLI as the enroll-worker-cluster runbook documents it.

Every call names its target explicitly: ``konduktor --kubeconfig PATH --context CTX <command>`` (root flags
before the subcommand), never the current context. The binary comes from the worker's ``KONDUKTOR_BIN``
setting (default ``konduktor`` on PATH). No secret is ever an argument (house rule: secrets never in the
argv of our processes); a caller that holds one (the bootstrap blob, passed as a file) names it in
``secrets`` so that it is replaced by ``<secret>`` wherever the CLI's output or stderr would show it. A
failure raises a non-retryable ``KonduktorFailed`` holding the command and the redacted stderr; the CLI's own
exceptions never escape.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import IO

from tenantflow.activities.errors import fail
from tenantflow.activities.settings import settings
from tenantflow.models.targets import KubeTarget

CLI_TIMEOUT_S = 120.0
PROMPT = "Apply this plan? [y/N]"
REDACTED = "<secret>"


def argv(target: KubeTarget, *args: str) -> list[str]:
    return [settings().konduktor_bin, "--kubeconfig", target.kubeconfig, "--context", target.context, *args]


def redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def _failed(args: list[str], what: str, stderr: str = "", secrets: Sequence[str] = ()) -> Exception:
    detail = redact(stderr.strip(), secrets)
    return fail("KonduktorFailed", f"`{' '.join(args)}` {what}" + (f": {detail}" if detail else ""))


def run(
    target: KubeTarget,
    *args: str,
    stdout: IO[str] | None = None,
    secrets: Sequence[str] = (),
    timeout_s: float = CLI_TIMEOUT_S,
) -> str:
    """Run one command; its stdout (or write it to ``stdout``); ``KonduktorFailed`` on a non-zero exit."""
    command = argv(target, *args)
    try:
        proc = subprocess.run(
            command,
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
        raise _failed(command, f"exited {proc.returncode}", proc.stderr, secrets)
    return redact(proc.stdout or "", secrets)


def answer_plan(
    target: KubeTarget,
    *args: str,
    approve: Callable[[list[str]], bool],
    secrets: Sequence[str] = (),
    timeout_s: float = CLI_TIMEOUT_S,
) -> list[str]:
    """Run a command that prints a plan and asks :data:`PROMPT`; answer ``y`` only if ``approve(plan)``.

    Returns the plan lines followed by the command's remaining output. Raises ``KonduktorFailed`` when the
    command fails or never asks.
    """
    command = argv(target, *args)
    try:
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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
                plan.append(redact(line.rstrip("\n"), secrets))
        else:
            _, err = proc.communicate()
            raise _failed(command, f"exited {proc.returncode} without asking to apply a plan", err, secrets)
        ok = approve(plan)
        out, err = proc.communicate(input="y\n" if ok else "n\n")
    finally:
        timer.cancel()
    if not ok:
        return plan
    if proc.returncode != 0:
        raise _failed(command, f"exited {proc.returncode}", err, secrets)
    return plan + [redact(line, secrets) for line in out.splitlines() if line.strip()]
