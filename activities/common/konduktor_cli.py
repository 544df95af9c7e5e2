"""Running the ``konduktor`` CLI as the enroll-worker-cluster runbook documents it.

Every call names its target explicitly: ``konduktor --kubeconfig PATH --context CTX <command>`` (root flags
before the subcommand), never the current context; PATH and CTX are what the worker's cluster registry
(:mod:`activities.common.clusters`) has for the target's cluster, never a path from the contract. The binary comes
from the worker's ``KONDUKTOR_BIN`` setting (default ``konduktor`` on PATH). No secret is ever an argument
(house rule: secrets never in the argv of our processes); a caller that holds one (the bootstrap blob, passed
as a file) names it in ``secrets`` so that it is replaced by ``<secret>`` wherever the CLI's output or stderr
would show it. A failure raises a non-retryable ``KonduktorFailed`` holding the command and the redacted
stderr; the CLI's own exceptions never escape. While a command runs, the calling activity heartbeats every
:data:`BEAT_S` (far below the 60 s heartbeat timeout), so a command that takes longer than the heartbeat
timeout (up to :data:`CLI_TIMEOUT_S`) never makes Temporal start a second attempt beside it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO

from tenantflow.activities.common import clusters
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.settings import settings
from tenantflow.models.targets import KubeTarget

CLI_TIMEOUT_S = 120.0
BEAT_S = 10.0
PROMPT = "Apply this plan? [y/N]"
REDACTED = "<secret>"


def argv(target: KubeTarget, *args: str) -> list[str]:
    """The command line for ``target``'s registered kubeconfig and context; an unregistered cluster is refused,
    and so is one the worker reaches in-cluster (the CLI takes a kubeconfig file)."""
    entry = clusters.resolve(target)
    if entry.kubeconfig is None:
        raise fail(
            "UnknownCluster",
            f"cluster {target.context!r} is registered in-cluster, but konduktor needs a kubeconfig file; "
            f"register it with a kubeconfig in {clusters.CLUSTERS_FILE_ENV}",
        )
    context = entry.context or target.context
    return [settings().konduktor_bin, "--kubeconfig", str(entry.kubeconfig), "--context", context, *args]


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
    proc = _start(command, subprocess.DEVNULL, stdout or subprocess.PIPE)
    out, err = _communicate(proc, command, timeout_s)
    if proc.returncode != 0:
        raise _failed(command, f"exited {proc.returncode}", err, secrets)
    return redact(out or "", secrets)


def _start(command: list[str], stdin: int, stdout: IO[str] | int) -> subprocess.Popen[str]:
    """Start ``command`` in a session of its own (so :func:`_kill` reaches whatever it starts), stderr piped."""
    try:
        return subprocess.Popen(
            command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
    except OSError as exc:
        raise _failed(command, f"could not start ({exc.strerror}); set KONDUKTOR_BIN") from None


def _communicate(
    proc: subprocess.Popen[str], command: list[str], timeout_s: float, answer: str | None = None
) -> tuple[str, str]:
    """Wait for ``proc`` (sending ``answer`` to its stdin), heartbeating every :data:`BEAT_S`; kill it and fail
    after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return proc.communicate(input=answer, timeout=max(0.0, min(BEAT_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            answer = None
            if time.monotonic() >= deadline:
                _kill(proc)
                proc.communicate()
                raise _failed(command, f"did not finish within {timeout_s:.0f} s") from None
            heartbeat(f"waiting for konduktor {' '.join(command[5:7])}")


def _kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the command and whatever it started (its own session), so nothing keeps its pipes open."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


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
    proc = _start(command, subprocess.PIPE, subprocess.PIPE)
    timer = threading.Timer(timeout_s, _kill, [proc])
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
        out, err = _communicate(proc, command, timeout_s, "y\n" if ok else "n\n")
    finally:
        timer.cancel()
    if not ok:
        return plan
    if proc.returncode != 0:
        raise _failed(command, f"exited {proc.returncode}", err, secrets)
    return plan + [redact(line, secrets) for line in out.splitlines() if line.strip()]
