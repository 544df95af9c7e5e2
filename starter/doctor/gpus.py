"""GPUs per node: what ``nvidia-smi -L`` lists on each GPU node against what the node advertises, and MIG.

A GPU is a line of ``nvidia-smi -L`` that starts with ``GPU ``; with MIG enabled the tool adds an indented
``MIG ...`` line per instance under its GPU (NVIDIA's MIG user guide,
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/). tenantflow sells whole GPUs (``nvidia.com/gpu`` and
``gres/gpu``), so a node with MIG on is a mismatch. The listing runs in each ready GPU node's slurmd (NodeSet)
pod (:func:`activities.common.slurm_cli.slurmd_pods`, :meth:`SlurmCtl.on_slurmd`), ``TENANTFLOW_FANOUT`` nodes at
a time (:func:`activities.common.fanout.fan_out`), and the count is compared with the Node's
``status.capacity["nvidia.com/gpu"]``.
"""

from __future__ import annotations

from tenantflow.activities.common.fanout import fan_out
from tenantflow.activities.common.kubeobjects import Manifest
from tenantflow.activities.common.manifests import GPU_RESOURCE
from tenantflow.activities.common.slurm_cli import SlurmCtl, slurmd_pods
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "nodes.gpus"
GRANT = "list on Nodes, list on Pods and create on pods/exec in the Slurm namespace"


def listing(output: str) -> tuple[int, int]:
    """(GPUs, MIG devices) of one ``nvidia-smi -L`` output."""
    gpus = sum(1 for line in output.splitlines() if line.startswith("GPU "))
    mig = sum(1 for line in output.splitlines() if line[:1].isspace() and line.strip().startswith("MIG "))
    return gpus, mig


def _ready(node: Manifest) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def gpus_per_node(estate: Estate) -> Result:
    """Every ready GPU node lists as many GPUs as it advertises, and none has MIG on."""
    advertised = {
        n["metadata"]["name"]: int((n.get("status") or {}).get("capacity", {}).get(GPU_RESOURCE, 0))
        for n in estate.kube.list("Node")
        if _ready(n) and int((n.get("status") or {}).get("capacity", {}).get(GPU_RESOURCE, 0))
    }
    if not advertised:
        return failed(NAME, f"no ready node advertises {GPU_RESOURCE}", "install the NVIDIA device plugin")
    pods = slurmd_pods(estate.target, advertised)
    wrong = [f"{node}: no running slurmd pod" for node in advertised if node not in pods]

    def listed(node: str) -> tuple[str, int, int, int]:
        out = SlurmCtl(estate.target).on_slurmd(pods[node]["metadata"]["name"], ["nvidia-smi", "-L"])
        return (node, *listing(out.stdout), out.exit_code)

    mig: list[str] = []
    seen: list[int] = []
    for node, gpus, instances, code in fan_out(listed, [n for n in advertised if n in pods], "nvidia-smi"):
        seen.append(gpus)
        if instances:
            mig.append(f"{node} ({instances} MIG devices on {gpus} GPUs)")
        if code != 0 or gpus != advertised[node]:
            wrong.append(f"{node}: nvidia-smi lists {gpus} GPU(s), the node advertises {advertised[node]}")
    if mig:
        return failed(
            NAME,
            f"MIG is on: {', '.join(mig[:3])}{f' and {len(mig) - 3} more node(s)' if len(mig) > 3 else ''}; "
            "tenantflow reserves and accounts whole GPUs",
            "disable MIG on those nodes (nvidia-smi -mig 0 and a GPU reset, or the GPU operator's "
            "nvidia.com/mig.config=all-disabled label)",
        )
    if wrong:
        return failed(NAME, "; ".join(wrong), "fix the node's driver, device plugin or slurmd pod, then re-run")
    counts = "-".join(str(n) for n in sorted({min(seen), max(seen)}))
    return ok(NAME, f"{len(seen)} GPU node(s), {counts} GPUs each as advertised, MIG off")
