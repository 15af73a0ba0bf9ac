"""The capture's record of a page's timers (`capture._TIMER_REGISTRY`): what a read waits for
before it takes the page's text, read in a real Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Page, async_playwright

from toolkit.pages.capture import _PENDING, _SCHEDULED, _TIMER_REGISTRY, default_chromium

OVERDUE = """() => {
  const id = setTimeout(() => { document.body.dataset.ran = "yes"; }, 1);
  const end = performance.now() + 30;
  while (performance.now() < end) {}
  return id;
}"""
"""Set a 1 ms timer, then keep the page busy past its due time: it is due but cannot have run."""


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=default_chromium(), args=["--no-sandbox"], headless=True
        )
        context = await browser.new_context()
        await context.add_init_script(script=_TIMER_REGISTRY)
        page = await context.new_page()
        await page.goto("data:text/html,<p>A page</p>")
        yield page
        await browser.close()


async def test_a_timer_past_its_due_time_that_has_not_run_is_still_scheduled(page: Page) -> None:
    """Behind a busy page (or on a loaded machine) a timer runs late: dropping it once its time
    passed read the page before what it draws, an endless list cut short."""
    both = await page.evaluate(
        f"() => {{ const id = ({OVERDUE})(); return [id, ({_SCHEDULED})(5000), "
        f"({_PENDING})([id])]; }}"
    )
    timer, (_, scheduled), pending = both
    assert timer in scheduled
    assert pending == 1


async def test_a_timer_that_ran_is_no_longer_pending(page: Page) -> None:
    timer = await page.evaluate(OVERDUE)
    await page.wait_for_function("() => document.body.dataset.ran === 'yes'")
    assert await page.evaluate(_PENDING, [timer]) == 0
    assert await page.evaluate(_SCHEDULED, 5000) == [0, []]


async def test_a_cleared_timer_is_not_waited_for(page: Page) -> None:
    timer = await page.evaluate("() => setTimeout(() => {}, 200)")
    assert (await page.evaluate(_SCHEDULED, 5000))[1] == [timer]
    await page.evaluate("(id) => clearTimeout(id)", timer)
    assert await page.evaluate(_PENDING, [timer]) == 0
    assert await page.evaluate(_SCHEDULED, 5000) == [0, []]


async def test_a_timer_due_beyond_the_wait_is_not_waited_for(page: Page) -> None:
    await page.evaluate("() => setTimeout(() => {}, 60000)")
    assert await page.evaluate(_SCHEDULED, 5000) == [0, []]
