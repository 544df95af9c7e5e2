"""Loading contract files (YAML or JSON) into models, with errors that name the field and the fix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.explain import format_validation_error
from tenantflow.models.tenant import TenantContract

M = TypeVar("M", bound=BaseModel)


class ContractError(ValueError):
    """A contract file that cannot be used; ``str()`` lists every problem, one per line."""


def _fill_kubeconfig(data: dict[str, Any], keys: tuple[str, ...], kubeconfig: str | None) -> None:
    default = kubeconfig or os.environ.get("TENANTFLOW_KUBECONFIG")
    for key in keys:
        target = data.get(key)
        if isinstance(target, dict) and not target.get("kubeconfig"):
            if default is None:
                raise ContractError(
                    f"{key}.kubeconfig is missing; set it in the file, pass --kubeconfig or "
                    "export TENANTFLOW_KUBECONFIG"
                )
            target["kubeconfig"] = str(Path(default).resolve())


def parse_contract(model: type[M], data: Any, source: str, kubeconfig: str | None = None) -> M:
    if not isinstance(data, dict):
        raise ContractError(f"{source}: expected a mapping at the top level")
    keys = ("cluster",) if model is TenantContract else ("hub", "worker")
    _fill_kubeconfig(data, keys, kubeconfig)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ContractError(format_validation_error(source, exc)) from None


def load_contract(model: type[M], path: Path, kubeconfig: str | None = None) -> M:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ContractError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise ContractError(f"{path}: not valid YAML: {exc}") from None
    return parse_contract(model, data, str(path), kubeconfig)


def load_tenant(path: Path, kubeconfig: str | None = None) -> TenantContract:
    return load_contract(TenantContract, path, kubeconfig)


def load_enrollment(path: Path, kubeconfig: str | None = None) -> WorkerEnrollment:
    return load_contract(WorkerEnrollment, path, kubeconfig)
