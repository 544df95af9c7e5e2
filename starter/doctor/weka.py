"""csi-wekafs and the Weka API: the CSI driver registered in the cluster, and the API answering in the shapes
tenantflow reads.

The driver registers the cluster-scoped ``CSIDriver`` ``csi.weka.io`` (csi-wekafs chart, ``csiDriverName``;
``GET /apis/storage.k8s.io/v1/csidrivers/csi.weka.io``, CSIDriver API reference,
https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/csi-driver-v1/). The Weka REST
API (https://docs.weka.io/getting-started-with-weka/weka-rest-api-and-equivalent-cli-commands) is read with
:class:`WekaClient`: ``POST /login`` (a session, not state), ``GET /cluster`` and ``GET /fileSystems``, each
parsed into the models the storage layer uses.
"""

from __future__ import annotations

from pydantic import ValidationError

from tenantflow.activities.common.weka_client import WekaClient
from tenantflow.models.weka_mount import DRIVER
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

DRIVER_NAME = "storage.csi_driver"
DRIVER_GRANT = "get on csidrivers.storage.k8s.io"
API_NAME = "storage.weka_api"
API_GRANT = "the Weka user (WEKA_USERNAME) the ClusterAdmin or OrgAdmin role"


def csi_wekafs_driver(estate: Estate) -> Result:
    """The CSIDriver object csi-wekafs registers."""
    driver = estate.kube.get("CSIDriver", DRIVER)
    if driver is None:
        return failed(
            DRIVER_NAME,
            f"no CSIDriver {DRIVER}: csi-wekafs is not installed in this cluster",
            "install csi-wekafs (helm chart csi-wekafsplugin, csiDriverName csi.weka.io) before onboarding",
        )
    modes = ", ".join((driver.get("spec") or {}).get("volumeLifecycleModes") or ["Persistent"])
    return ok(DRIVER_NAME, f"CSIDriver {DRIVER} registered ({modes})")


def weka_api(_: Estate) -> Result:
    """The Weka API logs in and answers ``/cluster`` and ``/fileSystems`` in the shapes tenantflow reads."""
    try:
        with WekaClient.from_settings() as weka:
            cluster = weka.cluster()
            filesystems = weka.filesystems()
    except ValidationError as exc:
        return failed(
            API_NAME,
            f"Weka answered in a shape tenantflow does not read: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}",
            "run a Weka release whose REST API v2 tenantflow supports",
        )
    return ok(API_NAME, f"Weka cluster {cluster.name!r} answers: {len(filesystems)} filesystem(s) listed")
