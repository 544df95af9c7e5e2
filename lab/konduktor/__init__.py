"""The lab's ``konduktor`` stand-in: the CLI commands the enroll-worker-cluster runbook documents, against the lab.

``python -m tenantflow.lab.konduktor [--kubeconfig PATH] [--context CTX] <command>``; ``lab up`` puts a
``konduktor`` wrapper on the worker's PATH (``KONDUKTOR_BIN`` in ``lab.env``, :func:`wrapper.write_wrapper`). It
talks only to the Kubernetes APIs named by the kubeconfig context, like the real CLI.

Output formats (the runbook is silent on most; these are the lab's, kept small):

* ``cluster enroll WORKER --ns NS`` prints the one-shot blob (one line, ``kdk1.<base64url JSON>``) on stdout. The
  blob holds the Ed25519 private key; the Hub's BootstrapEnrollment holds only the public key. Enrolling again
  before redemption issues a new key (the earlier blob stops verifying); after redemption it is refused.
* ``--version`` prints ``konduktor, version 0.4.2`` (the stand-in's own number).
* ``worker bootstrap BLOB`` or ``worker bootstrap --blob-file PATH`` prints its plan, one line per object ``<action>
  <Kind> <namespace/name|name>`` (actions ``create``, ``exists``, ``leave``; ``#`` starts a comment), then an empty
  line and the prompt ``Apply this plan? [y/N]`` on its own line, and reads the answer from stdin. On ``y`` it
  installs the namespaces, RBAC, the agent's ServiceAccount and Deployment and a ``trainy-bootstrap`` Secret holding
  a signed redemption token (never the private key); the lab's worker agent redeems it, empties the Secret and
  installs the tunnel credentials, log collector and metrics agent. ``BLOB`` is the runbook's form (``"$(cat
  "$BOOTSTRAP_BLOB")"``, which puts the private key in the process list, as the runbook warns); ``--blob-file``
  reads the runbook's ``0600`` file instead and refuses one that group or others may read. The runbook is silent on
  a file form: this flag is the lab's, offered in the default dialect's ``worker bootstrap --help`` (the second
  dialect documents and accepts only the positional blob, as the runbook does).
* ``cluster status WORKER -n NS`` prints ``WorkerCluster NS/WORKER generation=G cordoned=true|false`` and a table
  ``TYPE STATUS REASON OBSERVED MESSAGE``.
* ``cluster cordon WORKER -n NS [--uncordon]`` prints ``workercluster NS/WORKER cordoned|uncordoned``.
* ``cluster decommission WORKER -n NS --yes`` prints ``deleted|absent <kind> NS/WORKER`` per Hub object.
* ``worker reset [--dry-run]`` prints ``delete|release|leave <Kind> <ref>`` lines (``release`` drops the ownership
  labels of a preset object, which stays); the dry run ends with ``dry run: nothing was changed``.

The stand-in has a second dialect, for proving that tenantflow shows and approves what the CLI prints rather than
what it expects, selected by the environment of the process that runs it (the worker's):
``KONDUKTOR_LAB_DIALECT=table``. Its ``worker bootstrap`` prints a title, the API server, a table ``ACTION KIND
NAMESPACE NAME NOTE`` (``Install``, ``Present``, ``Keep``), a count and a note, then an empty line and the prompt
``Proceed with bootstrap of this worker? (y/n): `` with no newline after it, and reads the answer on that line; its
``worker reset`` prints a title, a header ``ACTION KIND NAMESPACE NAME NOTE``, one aligned row per object
(``Delete``, ``Release``, ``Keep``; ``-`` for no namespace) and a count line; ``KONDUKTOR_LAB_DIALECT=quiet`` prints
the dry run on stderr and nothing on stdout, as a CLI that logs its plan does. Unset or ``runbook``: the format
above.

Errors go to stderr with exit code 1 (2 for usage errors).
"""
