"""The shape of workflows/: thin workflow classes over collaborators (workflows/README.md).

No registered workflow class is more than two levels under ``object``, no module reaches into another object's
private attributes (a collaborator reads what it needs through public ones), and no handler is re-declared with a
``type: ignore[override]``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tenantflow.worker.registry import WORKFLOWS

WORKFLOWS_DIR = Path(__file__).resolve().parents[3] / "workflows"


def test_no_workflow_class_is_more_than_two_levels_deep() -> None:
    depth = {cls.__name__: len(cls.__mro__) - 2 for cls in WORKFLOWS}  # bases between the class and object
    assert {name: levels for name, levels in depth.items() if levels > 2} == {}


def private_reads(source: str) -> list[str]:
    """``x._name`` where ``x`` is not ``self``, ``cls`` or ``super()``: another object's private attribute."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue
        found.append(ast.unparse(node))
    return found


def test_private_reads_are_found() -> None:
    assert private_reads("def stamp(run):\n    return run._gates.approvals, self._plan, super()._x") == ["run._gates"]


def test_no_module_reads_another_objects_private_state() -> None:
    reads = {path.name: private_reads(path.read_text()) for path in sorted(WORKFLOWS_DIR.glob("*.py"))}
    assert {name: found for name, found in reads.items() if found} == {}


def test_no_handler_is_redeclared_over_its_base() -> None:
    assert [path.name for path in WORKFLOWS_DIR.glob("*.py") if "type: ignore[override]" in path.read_text()] == []
