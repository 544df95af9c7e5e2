"""The apiserver refuses an exec that names no container into a pod with several (the lab as a real cluster)."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import WSClient

from tests.lab.kubeapi.conftest import Cluster


def test_exec_without_a_container_into_a_multi_container_pod_is_refused(cluster: Cluster) -> None:
    """The apiserver's 400 for a pod with several containers (like a SUNK NodeSet pod: slurmd and nsscache)."""
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    containers = [{"name": "slurmd", "image": "slurm"}, {"name": "nsscache", "image": "nsscache"}]
    core.create_namespaced_pod(ns, {"metadata": {"name": "slurmd-x"}, "spec": {"containers": containers}})

    def run(**container: str) -> WSClient:
        ws: WSClient = stream(
            core.connect_get_namespaced_pod_exec,
            "slurmd-x",
            ns,
            command=["sinfo"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            _preload_content=False,
            **container,
        )
        return ws

    with pytest.raises(ApiException) as refused:
        run()
    said = str(refused.value)
    assert (
        "400" in said
        and "a container name must be specified for pod slurmd-x, choose one of: [slurmd nsscache]" in said
    )
    ws = run(container="slurmd")
    ws.run_forever(timeout=5)
    assert ws.returncode is not None, ws.read_stderr()
