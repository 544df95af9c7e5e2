"""Record, with the code of a previous release, the histories its runs left, for the replay tests, once.

A run that started on an older build is replayed by today's worker whenever it is queried (``tenantflow status``,
``result``) until the namespace's retention deletes it, so the shape of such a run is kept as a history recorded
by that build's own code. This module uses only what the previous release's test kit already had (the fakes,
``fake_worker``, ``wait_for_stage``, ``example_tenant``, the dev server), so it runs from a checkout of that release:

```bash
git worktree add --detach /tmp/prev 6408cad          # the release before d06ca5d (see PREVIOUS_RELEASE)
cp tests/histories/record_previous.py /tmp/prev/tests/histories/
mkdir -p /tmp/prev-pkg/tenantflow && touch /tmp/prev-pkg/tenantflow/__init__.py
for p in models workflows activities worker starter lab bench; do ln -sfn /tmp/prev/$p /tmp/prev-pkg/tenantflow/$p; done
cd /tmp/prev && PYTHONPATH=/tmp/prev-pkg:/tmp/prev TENANTFLOW_HISTORIES=$OLDPWD/tests/histories \\
    $OLDPWD/.venv/bin/python -m tests.histories.record_previous onboarding-refused-6408cad
```

(the package layout and every dependency pin of that release are today's, so today's venv runs its code with
``tenantflow`` found on ``PYTHONPATH`` first). Commit the JSON file it writes and never record it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from temporalio.client import WorkflowFailureError

from tests.temporal_env import start_dev_server
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage

PREVIOUS_RELEASE = "6408cad"
"""The last commit before d06ca5d, where every tenant workflow began with ``Gates.label``: a ``workflow.patched``
check (a marker and a ``TemporalChangeVersion`` upsert) before the tenant's search attribute."""
HERE = Path(os.environ.get("TENANTFLOW_HISTORIES", Path(__file__).resolve().parent))


async def onboarding_refused() -> None:
    """``onboarding-refused-6408cad``: an onboarding whose preflight refuses the contract (64 GPUs wanted, 8 free),
    so it fails before its plan gate with nothing written, as the previous release ran it."""
    server = await start_dev_server()
    try:
        async with fake_worker(server, FakeWorld(preflight_error="64 GPUs wanted, 8 free")) as api:
            handle = await api.start_onboarding(example_tenant("tenant-refused"))
            await wait_for_stage(api, handle, "preflight-failed")
            with contextlib.suppress(WorkflowFailureError):
                await handle.result()
            (HERE / f"onboarding-refused-{PREVIOUS_RELEASE}.json").write_text((await handle.fetch_history()).to_json())
    finally:
        await server.shutdown()


RECORDINGS = {f"onboarding-refused-{PREVIOUS_RELEASE}": onboarding_refused}
"""Each history this module records, by file name (without .json)."""


async def main(names: list[str]) -> None:
    unknown = set(names) - set(RECORDINGS)
    if not names or unknown:
        raise SystemExit(f"name the histories to record (never again once committed): {', '.join(RECORDINGS)}")
    for name in names:
        await RECORDINGS[name]()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
