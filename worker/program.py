"""End a tenantflow program without interpreter finalization, so a native thread cannot turn its exit into a crash.

The Temporal SDK's Rust core keeps threads of its own that can still call into Python while CPython finalizes;
the process then aborts with "Fatal Python error: PyGILState_Release: thread state ... must be current when
releasing" and exit status 134, after its work was done (temporalio/sdk-python#300, still open; PostHog's
commands end the same way, PostHog/posthog#53093). :func:`run_program` runs a program's main function, maps its
``SystemExit`` to an exit code as the interpreter would, flushes stdout, stderr and the logging handlers, and
leaves with :func:`os._exit`. The ``tenantflow`` CLI, ``python -m tenantflow.worker`` and the bench's simulated
worker end this way.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

ERROR_EXIT = 1
"""The exit code of a program that raised (as the interpreter's for an uncaught exception)."""


def exit_code(exc: SystemExit) -> int:
    """The code the interpreter exits with for ``exc``; a message (``sys.exit("...")``) is written to stderr."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")
    return ERROR_EXIT


def run_program(main: Callable[[], object]) -> NoReturn:
    """Run ``main``, then end the process with its exit code once every output is flushed, skipping finalization."""
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:
        traceback.print_exc()
        code = ERROR_EXIT
    finally:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
