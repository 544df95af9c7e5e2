"""activities/slurm_cli.undo_error: an undo write that fails while slurmdbd is down is retried; a refusal is not.

The outage output is what ``sacctmgr -i delete account`` printed (exit 1) with the lab's slurmdbd stopped.
"""

from __future__ import annotations

from tenantflow.activities.slurm.cli import undo_error

SLURMDBD_DOWN = (
    "sacctmgr: error: slurm_persist_conn_open_without_init: failed to open persistent connection to "
    "host:127.0.0.1:23804: Connection refused\n"
    "sacctmgr: error: Sending PersistInit msg: Connection refused\n"
)
REFUSED = " Error with request: Job(s) active, cancel job(s) before remove\n"


def test_an_undo_during_a_slurmdbd_outage_is_retryable() -> None:
    err = undo_error("account", "tenant-x", SLURMDBD_DOWN)
    assert err.type == "Unavailable" and not err.non_retryable
    assert "could not undo Slurm account tenant-x" in err.message and "Connection refused" in err.message


def test_a_refused_undo_fails_for_good() -> None:
    err = undo_error("account", "tenant-x", REFUSED)
    assert err.type == "SlurmCommandFailed" and err.non_retryable
    assert "Job(s) active" in err.message
