"""Loading contract files (YAML or JSON) into models, with errors that name the field and the fix."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.explain import format_validation_error
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract

M = TypeVar("M", bound=BaseModel)


class ContractError(ValueError):
    """A contract file that cannot be used; ``str()`` lists every problem, one per line, and ``fields`` names the
    fields concerned when the problem is theirs."""

    def __init__(self, message: str, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.fields = fields or []


def refuse_kubeconfig_paths(contract: BaseModel, source: str) -> None:
    """A contract names clusters of the worker's registry; a kubeconfig path in it is refused (a kubeconfig can
    run exec plugins on the worker host)."""
    paths = [f"{name}.kubeconfig" for name, value in contract if isinstance(value, KubeTarget) and value.kubeconfig]
    if paths:
        raise ContractError(
            f"{source}: {', '.join(paths)}: a contract cannot choose a kubeconfig file; remove it "
            "and name a cluster of the worker's registry (TENANTFLOW_CLUSTERS_FILE) in .context",
            paths,
        )


def parse_contract(model: type[M], data: Any, source: str) -> M:
    if not isinstance(data, dict):
        raise ContractError(f"{source}: expected a mapping at the top level")
    try:
        contract = model.model_validate(data)
    except ValidationError as exc:
        raise ContractError(format_validation_error(source, exc)) from None
    refuse_kubeconfig_paths(contract, source)
    return contract


def load_contract(model: type[M], path: Path) -> M:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ContractError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise ContractError(f"{path}: not valid YAML: {exc}") from None
    return parse_contract(model, data, str(path))


def load_tenant(path: Path) -> TenantContract:
    return load_contract(TenantContract, path)


def load_enrollment(path: Path) -> WorkerEnrollment:
    return load_contract(WorkerEnrollment, path)


def workflow_inputs() -> list[type[BaseModel]]:
    """The input model of every workflow the worker registers that takes one: the parameter of its ``@workflow.run``
    method (``TenantHold`` takes none)."""
    from tenantflow.worker.registry import WORKFLOWS

    inputs: list[type[BaseModel]] = []
    for workflow_class in WORKFLOWS:
        hints = typing.get_type_hints(inspect.getattr_static(workflow_class, "run"))
        hints.pop("return", None)
        inputs.extend(hints.values())
    return inputs


def contract_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of both contracts and of every workflow input, by model name (``tenantflow schema``,
    ``GET /schemas``)."""
    models: list[type[BaseModel]] = [TenantContract, WorkerEnrollment, *workflow_inputs()]
    return {model.__name__: model.model_json_schema() for model in models}
