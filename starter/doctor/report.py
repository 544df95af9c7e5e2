"""One doctor check's result, the estate the checks read, and running them all.

A check is a function of an :class:`Estate` returning one :class:`Result` (check name, ok/FAIL/skip, what was
found and, on failure, the fix). :func:`run_checks` runs every check of :data:`starter.doctor.checks.CHECKS` at
once (in threads; the report keeps their order) and turns what a check could not read into a failed line: a refusal
(HTTP 401/403) names the access to grant (the check's ``grant``), any other error says what could not be read.
``exit_code`` is 3 when any check failed (an incompatibility), else 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.output import EXIT_RUN_FAILED

ACCESS_DENIED = frozenset({"Forbidden", "Unauthorized"})


class Outcome(StrEnum):
    ok = "ok"
    fail = "FAIL"
    skip = "skip"


@dataclass(frozen=True)
class Result:
    """What one check found: ``found`` says what is there; ``fix`` what to change when it fails (or, for a
    skip, why it was skipped)."""

    check: str
    outcome: Outcome
    found: str
    fix: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.fail

    def line(self) -> str:
        """``check  ok|FAIL|skip  found[  fix: ...]``, one line."""
        tail = f"  fix: {self.fix}" if self.fix and self.outcome is Outcome.fail else ""
        why = f" ({self.fix})" if self.fix and self.outcome is Outcome.skip else ""
        return f"{self.check:<24} {self.outcome.value:<4} {self.found}{why}{tail}"

    def as_json(self) -> dict[str, str]:
        return {"check": self.check, "outcome": self.outcome.value, "found": self.found, "fix": self.fix}


def ok(check: str, found: str) -> Result:
    return Result(check, Outcome.ok, found)


def failed(check: str, found: str, fix: str) -> Result:
    return Result(check, Outcome.fail, found, fix)


def skipped(check: str, found: str, why: str) -> Result:
    return Result(check, Outcome.skip, found, why)


@dataclass
class Estate:
    """The cluster ``target`` (a context of the worker's cluster registry) and the services of the worker's
    settings, read lazily and at most once per run."""

    target: KubeTarget

    @cached_property
    def kube(self) -> KubeObjects:
        return KubeObjects(self.target)

    @cached_property
    def slurm(self) -> SlurmCtl:
        """The slurmctld pod of the cluster (``SLURM_NAMESPACE``/``SLURM_CONTROLLER_DEPLOYMENT``)."""
        return SlurmCtl.connect(self.target)

    @cached_property
    def slurm_config(self) -> dict[str, str]:
        """``scontrol show config`` as slurmctld runs (:meth:`SlurmCtl.config`)."""
        return self.slurm.config()


@dataclass(frozen=True)
class Check:
    """A check: its name, the function, and the access to grant when it is refused."""

    name: str
    run: Callable[[Estate], Result]
    grant: str


def run_check(check: Check, estate: Estate) -> Result:
    """``check`` on ``estate``; what it could not read is a failure naming why and the fix."""
    try:
        return check.run(estate)
    except ApplicationError as exc:
        if exc.type in ACCESS_DENIED:
            return failed(check.name, f"cannot read: {exc.message}", f"grant {check.grant}")
        return failed(check.name, f"cannot read: {exc.message}", "make it reachable from the worker and re-run")
    except Exception as exc:  # any other failure of a probe is its line, never the whole report
        return failed(check.name, f"cannot read: {type(exc).__name__}: {exc}", "make it reachable and re-run")


def run_checks(estate: Estate, checks: Sequence[Check]) -> list[Result]:
    """Every check at once (each mostly waits on a server), its results in the order of ``checks``."""
    with ThreadPoolExecutor(max_workers=max(len(checks), 1), thread_name_prefix="doctor") as pool:
        return list(pool.map(lambda check: run_check(check, estate), checks))


def exit_code(results: Sequence[Result]) -> int:
    """3 when any check failed, else 0."""
    return EXIT_RUN_FAILED if any(r.failed for r in results) else 0
