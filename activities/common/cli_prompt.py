"""A command that asks a question on a terminal: run it on a pseudo-terminal, read to its prompt, answer later.

Some CLIs (``konduktor worker bootstrap``) print a plan, then ask on their terminal and read the answer from it.
:class:`PromptSession` runs such a command with its stdin and stdout on a pseudo-terminal (``os.openpty``, Python's
``pty`` documentation; echo and the ``\\n`` to ``\\r\\n`` output translation switched off with ``termios``, so
the text read is the bytes the command wrote and the answer is not echoed into it) and its stderr in a private
file. :meth:`PromptSession.read_to_prompt` reads until a prompt-like tail appears and the output then stays quiet
for :data:`QUIET_S`, or the output stays quiet for :data:`SILENT_S` without one, within a budget; it never waits
for a newline after the prompt. The text is opaque: the caller shows it and decides; :meth:`PromptSession.answer`
writes the answer only when called, then reads the rest of the output. Nothing here heartbeats: the caller runs
it in a thread and heartbeats from its activity.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import tempfile
import termios
import time
from collections.abc import Sequence

QUIET_S = 0.5
"""How long the output must stay quiet after a prompt-like tail before it counts as the prompt."""
SILENT_S = 5.0
"""How long output without a prompt-like tail must stay quiet before it is taken as waiting for an answer."""
PROMPT_TAIL = re.compile(r"(\[[yY]/[nN]\]|\([yY]/[nN]\)|\?)\s*:?\s*$")
"""A tail that asks a yes/no question: ``[y/N]``, ``(y/n):``, or a question mark, then at most a colon."""


class PromptFailed(Exception):
    """The command ended or stayed silent without asking, or did not finish after the answer."""


class PromptSession:
    """One run of ``command`` on a pseudo-terminal; ``secrets`` are replaced by ``<secret>`` in all it shows."""

    def __init__(self, command: Sequence[str], secrets: Sequence[str] = ()) -> None:
        self.command = list(command)
        self.secrets = [s for s in secrets if s]
        self._out = bytearray()
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.ONLCR
        attrs[3] &= ~(termios.ECHO | termios.ECHONL)
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        self.master = master
        try:
            self.proc = subprocess.Popen(
                self.command, stdin=slave, stdout=slave, stderr=self._err, start_new_session=True, close_fds=True
            )
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "<secret>")
        return text

    @property
    def text(self) -> str:
        """All the output so far, decoded (invalid bytes replaced) and redacted."""
        return self.redact(self._out.decode(errors="replace"))

    def stderr(self) -> str:
        self._err.seek(0)
        return self.redact(self._err.read().decode(errors="replace"))

    def _read(self, wait_s: float) -> bool:
        """Read what is there within ``wait_s``; False at the end of the output (the command closed the terminal)."""
        ready, _, _ = select.select([self.master], [], [], max(0.0, wait_s))
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every writer of the terminal is gone
            return False
        self._out.extend(chunk)
        return bool(chunk)

    def read_to_prompt(self, budget_s: float) -> str:
        """The output up to and including the prompt (:data:`PROMPT_TAIL` then :data:`QUIET_S` quiet, or
        :data:`SILENT_S` quiet); :class:`PromptFailed` when it ends, or asks nothing, within ``budget_s``."""
        deadline = time.monotonic() + budget_s
        last = time.monotonic()
        while time.monotonic() < deadline:
            before = len(self._out)
            if not self._read(0.1):
                raise PromptFailed(f"exited {self.proc.wait(5)} without asking")
            now = time.monotonic()
            if len(self._out) != before:
                last = now
                continue
            quiet = now - last
            asks = PROMPT_TAIL.search(self._out.decode(errors="replace")) is not None
            if self._out and (quiet >= SILENT_S or (asks and quiet >= QUIET_S)):
                return self.text
        self.kill()
        raise PromptFailed(f"asked nothing within {budget_s:.0f} s")

    def printed_more(self) -> bool:
        """Whether the command printed anything since the text was read (within :data:`QUIET_S`): then the text
        that was decided on was not the whole question, and it must be decided again."""
        before = len(self._out)
        self._read(QUIET_S)
        return len(self._out) != before

    def answer(self, reply: str, budget_s: float) -> tuple[int, str]:
        """Write ``reply`` and a newline to the prompt; the exit code and the output that followed it."""
        start = len(self._out)
        os.write(self.master, (reply + "\n").encode())
        deadline = time.monotonic() + budget_s
        while time.monotonic() < deadline and self._read(0.2):
            if self.proc.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                break
        try:
            code = self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise PromptFailed(f"did not finish within {budget_s:.0f} s of the answer") from None
        return code, self.redact(self._out[start:].decode(errors="replace"))

    def kill(self) -> None:
        """SIGKILL the command and whatever it started (its own session)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)

    def close(self) -> None:
        """Kill the command if it still runs; release the terminal and the stderr file."""
        if self.proc.poll() is None:
            self.kill()
        with contextlib.suppress(OSError):
            os.close(self.master)
        self._err.close()
