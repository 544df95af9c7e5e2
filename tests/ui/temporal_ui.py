"""The Temporal web UI (2.54) as an operator uses it, for playwright: the run list, a run's page, its User
Metadata, the Send an Update form; on failure a screenshot, the page's HTML and a playwright trace are kept as
test artifacts."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from playwright.async_api import Browser, Page, expect

WAIT_MS = 60_000
"""How long the page may take to show what is awaited: playwright's 5 s default is too short for the UI on a
shared 2-core box (a wait for the page, not a timing being tested)."""
expect.set_options(timeout=WAIT_MS)


@dataclass
class Metadata:
    """What the User Metadata tab shows, as rendered text."""

    summary: str
    details: str
    current_details: str
    code_blocks: list[str]
    """The text of every fenced code block of the current details: what an operator copies."""

    def payload(self) -> dict[str, Any]:
        """The one code block of the current details that is a JSON object (the Update's payload)."""
        objects = []
        for block in self.code_blocks:
            with contextlib.suppress(ValueError):
                value = json.loads(block)
                if isinstance(value, dict):
                    objects.append(value)
        assert len(objects) == 1, f"expected one JSON payload among the code blocks {self.code_blocks}"
        return objects[0]


class TemporalUI:
    def __init__(self, page: Page, base_url: str, namespace: str = "default") -> None:
        self.page = page
        self.base_url = base_url
        self.namespace = namespace

    async def find_run(self, query: str, workflow_id: str) -> None:
        """Open the run list filtered by a visibility ``query`` (as typed into the list's filter), then the run."""
        await self.page.goto(f"{self.base_url}/namespaces/{self.namespace}/workflows?query={quote(query, safe='')}")
        rows = self.page.get_by_test_id("workflows-summary-configurable-table-row")
        await rows.filter(has_text=workflow_id).get_by_role("link", name=workflow_id, exact=True).click()
        await expect(self.page.get_by_test_id("workflow-id-heading")).to_contain_text(workflow_id)

    async def user_metadata(self) -> Metadata:
        await self.page.get_by_role("tab", name="User Metadata").click()
        texts = []
        for frame_id in ("user-metadata-summary", "user-metadata-details", "user-metadata-current-details"):
            body = self.page.frame_locator(f"#{frame_id}").locator("body")
            await expect(body).not_to_be_empty()
            texts.append(await body.inner_text())
        code = self.page.frame_locator("#user-metadata-current-details").locator("pre code")
        blocks = [text.strip() for text in await code.all_inner_texts()]
        return Metadata(*texts, code_blocks=blocks)

    async def open_update_form(self) -> dict[str, str]:
        """More Actions > Send an Update, its Name list opened: each update it offers, with the description shown
        under the name ("Custom", a name typed by hand, has none)."""
        await self.page.get_by_role("button", name="More Actions").click()
        await self.page.get_by_role("menuitem", name="Send an Update").click()
        dialog = self.page.get_by_role("dialog", name="Send an Update")
        await dialog.get_by_test_id("update-select-button").click()
        await expect(dialog.get_by_role("option").first).to_be_visible()
        offered = {}
        for text in await dialog.get_by_role("option").all_inner_texts():
            name, _, description = text.strip().partition("\n")
            offered[name] = description.strip()
        return offered

    async def send_update(self, name: str, payload: str) -> None:
        """Choose ``name`` in the open Send an Update form (:meth:`open_update_form`), type ``payload`` into Data
        and send it."""
        dialog = self.page.get_by_role("dialog", name="Send an Update")
        await dialog.get_by_role("option", name=name).click()
        await dialog.get_by_role("textbox", name="Data").click()
        await self.page.keyboard.insert_text(payload)
        await dialog.get_by_test_id("confirm-modal-button").click()
        await expect(self.page.get_by_test_id("toast-live-region-polite")).to_contain_text("Update successful")

    async def expect_status(self, status: str) -> None:
        await self.page.reload()
        await expect(self.page.get_by_test_id("execution-status")).to_have_text(status)


@contextlib.asynccontextmanager
async def operator_session(browser: Browser, base_url: str, artifacts: Path) -> AsyncIterator[TemporalUI]:
    """A fresh browser page on the UI; when the block fails, the screenshot, HTML and trace go to ``artifacts``."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(WAIT_MS)
    await context.tracing.start(screenshots=True, snapshots=True)
    page = await context.new_page()
    try:
        yield TemporalUI(page, base_url)
    except BaseException as exc:
        artifacts.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=artifacts / "page.png", full_page=True)
        (artifacts / "page.html").write_text(await page.content())
        await context.tracing.stop(path=artifacts / "trace.zip")
        exc.add_note(f"browser artifacts (screenshot, HTML, playwright trace) in {artifacts}")
        raise
    finally:
        await context.close()
