"""The environment variables the worker reads, found in its source: settings fields' aliases and ``os.environ`` /
``os.getenv`` reads of literal names, of module constants or of loop variables over module-level tuples of names,
in the packages the worker process runs."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKER_PACKAGES = ("models", "workflows", "activities", "worker")
# temporalio.envconfig reads these itself (the temporal CLI's variables, as far as the Python SDK applies them), once
# the worker connects through it; TEMPORAL_GRPC_META_<NAME> is a family, documented by its prefix
ENVCONFIG = frozenset(
    {
        "TEMPORAL_ADDRESS",
        "TEMPORAL_NAMESPACE",
        "TEMPORAL_API_KEY",
        "TEMPORAL_TLS",
        "TEMPORAL_TLS_CLIENT_CERT_PATH",
        "TEMPORAL_TLS_CLIENT_CERT_DATA",
        "TEMPORAL_TLS_CLIENT_KEY_PATH",
        "TEMPORAL_TLS_CLIENT_KEY_DATA",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
        "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
        "TEMPORAL_TLS_SERVER_NAME",
        "TEMPORAL_PROFILE",
        "TEMPORAL_CONFIG_FILE",
    }
)


def _constants(tree: ast.Module) -> dict[str, str]:
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _tuples(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level tuples of strings, by name (``ENDPOINTS = ("A", "B")``)."""
    return {
        target.id: [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _loop_values(tree: ast.Module) -> dict[str, list[str]]:
    """Loop variables that run over a module-level tuple of strings (``for var in ENDPOINTS``)."""
    tuples = _tuples(tree)
    loops: list[ast.comprehension | ast.For] = [n for n in ast.walk(tree) if isinstance(n, ast.comprehension | ast.For)]
    return {
        loop.target.id: tuples[loop.iter.id]
        for loop in loops
        if isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Name) and loop.iter.id in tuples
    }


def _names(node: ast.expr, constants: dict[str, str], loops: dict[str, list[str]]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        return [constants[node.id]] if node.id in constants else loops.get(node.id, [])
    return []


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _settings_aliases(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if not any(isinstance(b, ast.Name) and b.id.endswith("Settings") for b in cls.bases):
            continue
        for call in (n for n in ast.walk(cls) if isinstance(n, ast.Call)):
            found |= {
                kw.value.value
                for kw in call.keywords
                if kw.arg == "alias" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)
            }
    return found


def _environ_reads(tree: ast.Module) -> set[str]:
    constants, loops = _constants(tree), _loop_values(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.func, ast.Attribute)
            and ((node.func.attr == "get" and _is_environ(node.func.value)) or node.func.attr == "getenv")
        ):
            key = node.args[0]
        if key is not None:
            found.update(_names(key, constants, loops))
    return found


def worker_variables() -> set[str]:
    found: set[str] = set()
    uses_envconfig = False
    for package in WORKER_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text()
            tree = ast.parse(source)
            found |= _settings_aliases(tree) | _environ_reads(tree)
            uses_envconfig |= "temporalio.envconfig" in source
    return found | ENVCONFIG if uses_envconfig else found


def listed(env_file: Path) -> set[str]:
    """Names in a KEY=VALUE file, set (``NAME=...``) or documented as unset (``#NAME=...``)."""
    names: set[str] = set()
    for line in env_file.read_text().splitlines():
        candidate = line[1:] if line.startswith("#") else line
        name, sep, _ = candidate.partition("=")
        if sep and name and name == name.upper() and name.replace("_", "").isalnum() and " " not in name:
            names.add(name)
    return names
