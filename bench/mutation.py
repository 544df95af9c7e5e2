"""The mutation score of the pure core, measured with mutmut (not in CI): ``python -m tenantflow.bench.mutation``.

The pure core is ``models/`` (contracts, plans and their hash and diff, hostlists, units, durations, the step
catalogue) and the diffing of Kubernetes objects in ``activities/common/kubeensure.py``. mutmut
(https://mutmut.readthedocs.io) changes one operator, constant or call at a time in a copy of the code and runs
the tests that reach the changed function; a mutant the tests do not notice "survives". The tests are the fast
ones (``tests/unit``, ``tests/generated`` with the small ``mutation`` Hypothesis profile).

mutmut mutates a source tree it can copy beside the tests, while the repository installs its top-level folders
as ``tenantflow.<folder>``; so the run happens in a scratch workspace holding ``tenantflow/<folder>`` copies, the
tests, the example contracts and a ``pyproject.toml`` with the ``[tool.mutmut]`` settings. The report (Markdown,
``docs/mutation.md`` by default: outside the package folders the wheel ships) gives the score per module and
lists every surviving mutant with its diff. Install the tool with ``pip install -c constraints.txt -e
'.[mutation]'``. It takes long on two cores: name modules with ``--only models/plan.py models/hostlist.py`` to
measure a few at a time, ``--merge`` to put their rows into an existing report's raw data (``mutation.json``
beside it), ``--from-json`` to write the report again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("models", "activities", "workflows", "worker", "starter", "lab", "bench")
CORE = ("models", "activities/common/kubeensure.py")
TESTS = ("tests/unit", "tests/generated")
"""The fast test folders mutmut runs (the whole of tests/ is copied: they import helpers from the others)."""
KILLED = {"killed", "timeout", "caught by type check"}
LINE = re.compile(r"^\s*(?P<name>[\w.]+__mutmut_\d+): (?P<status>.+)$")


@dataclass
class ModuleScore:
    statuses: Counter[str] = field(default_factory=Counter)
    survivors: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    @property
    def killed(self) -> int:
        return sum(n for status, n in self.statuses.items() if status in KILLED)


def workspace_config(only: list[str]) -> str:
    """The scratch workspace's pyproject.toml: the repository's pytest settings plus mutmut's."""
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    lines = ["[tool.pytest.ini_options]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in pytest_options.items() if key != "addopts"]
    lines += [
        "",
        "[tool.mutmut]",
        f"source_paths = {json.dumps([f'tenantflow/{path}' for path in only])}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]',
        f"pytest_add_cli_args_test_selection = {json.dumps(list(TESTS))}",
        'also_copy = ["tenantflow", "examples"]',
    ]
    return "\n".join(lines) + "\n"


def prepare(workdir: Path, only: list[str]) -> None:
    """A fresh workspace: ``tenantflow/<folder>`` copies, the fast tests, the examples, the settings."""
    shutil.rmtree(workdir, ignore_errors=True)
    (workdir / "tenantflow").mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, workdir / "tenantflow" / package, ignore=ignore)
    shutil.copytree(ROOT / "tests", workdir / "tests", ignore=ignore)
    shutil.copytree(ROOT / "examples", workdir / "examples")
    (workdir / "pyproject.toml").write_text(workspace_config(only))


def mutmut(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "PYTHONDONTWRITEBYTECODE": "1"}
    tool = Path(sys.executable).with_name("mutmut")
    return subprocess.run([str(tool), *args], cwd=workdir, env=env, text=True, capture_output=True, check=False)


def module_of(mutant: str) -> str:
    """``tenantflow.models.plan.x_plan_changes__mutmut_3`` -> ``models/plan.py``."""
    dotted = mutant.split("__mutmut_")[0].rsplit(".", 1)[0].removeprefix("tenantflow.")
    return dotted.replace(".", "/") + ".py"


def scores(workdir: Path) -> dict[str, ModuleScore]:
    listed = mutmut(workdir, "results", "--all", "true")
    found: dict[str, ModuleScore] = {}
    for line in listed.stdout.splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        module = found.setdefault(module_of(match["name"]), ModuleScore())
        module.statuses[match["status"]] += 1
        if match["status"] not in KILLED:
            module.survivors.append(match["name"])
    return found


def diff_of(workdir: Path, mutant: str) -> str:
    shown = mutmut(workdir, "show", mutant).stdout
    changed = [line for line in shown.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    return " / ".join(line.strip() for line in changed)[:300]


EQUIVALENT_NOTE = (
    "Some survivors cannot be killed by any test, and are listed like the others (so the score is a lower bound): "
    "equivalent mutants that change nothing observable (a guard the caller already made, `zip(strict=...)` after "
    "a length check, the replacement text of a key that only groups). Code that runs only while its module loads "
    "(the step catalogue of `models/runbook.py`) is measured through tests that call its builders: mutmut forks "
    "each mutant's worker from a process that has imported the code already."
)


def report(found: dict[str, ModuleScore], diffs: dict[str, str]) -> str:
    killed, total = sum(m.killed for m in found.values()), sum(m.total for m in found.values())
    lines = [
        "# Mutation score of the pure core",
        "",
        "Measured with `python -m tenantflow.bench.mutation` (mutmut, tests/unit and tests/generated with the",
        "`mutation` Hypothesis profile); not part of CI. A mutant counts as killed when a test failed, timed out or",
        "the type checker refused it.",
        "",
        EQUIVALENT_NOTE,
        "",
        f"**Score: {killed} of {total} mutants killed ({100 * killed / max(total, 1):.1f} %).**",
        "",
        "| module | mutants | killed | score | not killed, by status |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for module, score in sorted(found.items()):
        rest = ", ".join(f"{status} {n}" for status, n in sorted(score.statuses.items()) if status not in KILLED)
        percent = 100 * score.killed / max(score.total, 1)
        lines.append(f"| {module} | {score.total} | {score.killed} | {percent:.1f} % | {rest or '-'} |")
    lines += ["", "## Surviving mutants", ""]
    for _, score in sorted(found.items()):
        for mutant in score.survivors:
            lines.append(f"- `{mutant.removeprefix('tenantflow.')}`: `{diffs.get(mutant, '')}`")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=list(CORE), help="paths under the repository to mutate")
    parser.add_argument("--workdir", type=Path, default=ROOT / ".state" / "mutation")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--report", type=Path, default=ROOT / "docs" / "mutation.md")
    parser.add_argument("--merge", action="store_true", help="keep the other modules of the report's raw data")
    parser.add_argument("--from-json", action="store_true", help="only write the report again from its raw data")
    args = parser.parse_args(argv)
    raw = args.report.with_suffix(".json")
    merged = json.loads(raw.read_text()) if (args.merge or args.from_json) and raw.exists() else {}
    if not args.from_json:
        prepare(args.workdir, args.only)
        run = mutmut(args.workdir, "run", "--max-children", str(args.max_children))
        if run.returncode != 0:
            print(run.stdout[-3000:], run.stderr[-3000:], sep="\n", file=sys.stderr)
            return run.returncode
        found = scores(args.workdir)
        diffs = {mutant: diff_of(args.workdir, mutant) for score in found.values() for mutant in score.survivors}
        if args.merge and raw.exists():
            merged = json.loads(raw.read_text())
        for module, score in found.items():
            survivors = {m: diffs[m] for m in score.survivors}
            merged[module] = {"statuses": dict(score.statuses), "survivors": survivors}
    every = {m: ModuleScore(Counter(d["statuses"]), list(d["survivors"])) for m, d in merged.items()}
    every_diff = {m: diff for d in merged.values() for m, diff in d["survivors"].items()}
    args.report.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    args.report.write_text(report(every, every_diff))
    print(args.report.read_text().split("\n## ")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
