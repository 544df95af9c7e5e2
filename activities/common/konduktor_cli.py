"""Running the ``konduktor`` CLI as the enroll-worker-cluster runbook documents it.

Every call names its target explicitly: ``konduktor --kubeconfig PATH --context CTX <command>`` (root flags before
the subcommand), never the current context; PATH and CTX are what the worker's cluster registry
(:mod:`activities.common.clusters`) has for the target's cluster, never a path from the contract. The binary comes
from the worker's ``KONDUKTOR_BIN`` setting (default ``konduktor`` on PATH). A caller that holds a secret (the
bootstrap blob) names it in ``secrets`` so that it is replaced by ``<secret>`` wherever the CLI's output, stderr or
its command line in an error would show it. :func:`version` reads ``konduktor --version`` for preflight
(:data:`SUPPORTED_VERSIONS`) and :func:`blob_file_option` the file form ``worker bootstrap --help`` documents, if
any. A failure raises a non-retryable ``KonduktorFailed`` holding the command and the redacted stderr; the CLI's own
exceptions never escape. While a command runs, the calling activity heartbeats every :data:`BEAT_S` (far below the
60 s heartbeat timeout), so a command that takes longer than the heartbeat timeout (up to :data:`CLI_TIMEOUT_S`)
never makes Temporal start a second attempt beside it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import IO

from tenantflow.activities.common import clusters
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.settings import settings
from tenantflow.models.targets import KubeTarget

CLI_TIMEOUT_S = 120.0
BEAT_S = 10.0
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
    shown = redact(" ".join(args), secrets)
    return fail("KonduktorFailed", f"`{shown}` {what}" + (f": {detail}" if detail else ""))


SUPPORTED_VERSIONS = ((0, 4), (1, 0))
"""The ``konduktor`` CLI versions tenantflow drives, ``>= 0.4, < 1.0`` (README, "Enrolling a worker cluster"):
the runbook's commands and the stand-in's version; another range is refused at preflight."""
VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def supported_range() -> str:
    (low_major, low_minor), (high_major, high_minor) = SUPPORTED_VERSIONS
    return f">= {low_major}.{low_minor}, < {high_major}.{high_minor}"


def version(target: KubeTarget) -> tuple[str, bool]:
    """``konduktor --version`` as printed (its first line), and whether its version is in
    :data:`SUPPORTED_VERSIONS`; a line with no version number is not."""
    printed = (run(target, "--version").strip().splitlines() or [""])[0]
    found = VERSION.search(printed)
    if found is None:
        return printed, False
    number = (int(found.group(1)), int(found.group(2)))
    return printed, SUPPORTED_VERSIONS[0] <= number < SUPPORTED_VERSIONS[1]


FILE_OPTION = re.compile(r"(--[a-z][a-z0-9-]*file)\b")


def blob_file_option(target: KubeTarget) -> str | None:
    """The option ``konduktor worker bootstrap --help`` documents for reading the blob from a file (an option
    ending in ``file`` on a help line that mentions the blob), or None: then only the runbook's positional blob.
    A stdin form is never used: stdin is the terminal the plan's prompt is answered on."""
    for line in run(target, "worker", "bootstrap", "--help").splitlines():
        found = FILE_OPTION.search(line)
        if found and "blob" in line.lower():
            return found.group(1)
    return None


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


def _communicate(proc: subprocess.Popen[str], command: list[str], timeout_s: float) -> tuple[str, str]:
    """Wait for ``proc``, heartbeating every :data:`BEAT_S`; kill it and fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return proc.communicate(timeout=max(0.0, min(BEAT_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                _kill(proc)
                proc.communicate()
                raise _failed(command, f"did not finish within {timeout_s:.0f} s") from None
            heartbeat(f"waiting for konduktor {' '.join(command[5:7])}")


def _kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the command and whatever it started (its own session), so nothing keeps its pipes open."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
