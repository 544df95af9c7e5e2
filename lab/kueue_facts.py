"""What the lab's Kueue, MultiKueue and JobSet are, from their upstream projects (never from tenantflow's models).

Each name is documented by kubernetes-sigs/kueue or kubernetes-sigs/jobset; the lab's stand-ins (the Hub's
dispatch, the worker's Kueue, the worker agent's upgrades) and its seed use them.
"""

from __future__ import annotations

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""Kueue, "Run a JobSet" and the Configuration API (``manageJobsWithoutQueueName``): the label that puts a job in
a LocalQueue."""
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
"""Kueue MultiKueue (``pkg/controller/admissionchecks/multikueue``, the garbage collector of kueue#1643, config
``multiKueue.origin``): the label on every object MultiKueue creates in a worker cluster."""

KUEUE_DEPLOYMENT = ("kueue-system", "kueue-controller-manager")
"""Kueue's release manifests (``manifests.yaml``) and the runbook's "Wait for dependency convergence"
(``kubectl -n kueue-system rollout status deploy/kueue-controller-manager``)."""
JOBSET_DEPLOYMENT = ("jobset-system", "jobset-controller-manager")
"""JobSet's release manifests (``manifests.yaml``, and the Helm chart's ``jobset-system`` namespace): the
controller Deployment the runbook watches (``kubectl -n jobset-system get deploy -w``)."""
KUEUE_IMAGE = "registry.k8s.io/kueue/kueue"
"""Kueue's release images: ``registry.k8s.io/kueue/kueue:<version>`` (kueue.sigs.k8s.io, Installation)."""
JOBSET_IMAGE = "registry.k8s.io/jobset/jobset"
"""JobSet's release images: ``registry.k8s.io/jobset/jobset:<version>`` (the chart's ``image.repository``)."""


def image(repository: str, version: str) -> str:
    """The image of a release: ``<repository>:<version>`` (``v0.16.1``: the tags keep the ``v``)."""
    return f"{repository}:{version}"
