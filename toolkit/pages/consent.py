"""Answering a cookie-consent dialog that hides a page being captured, as a reader does.

Many sites hold their article back, or draw nothing but menus, until a visitor answers the
consent dialog of their consent tool (OneTrust, Cookiebot, Didomi, Quantcast, TrustArc,
Usercentrics, Sourcepoint, ...) or their own. Stored so, the page is the dialog beside the
menus, and every claim checked against it is found unsupported for our capture's fault.

`read_consent` reads what a page shows of consent dialogs in each of its frames and their open
shadow roots: a button (a `button`, a `role=button`, an input button, or a link that leads
nowhere) inside a consent tool's box (`walls.CONSENT_ROOTS`) or inside the smallest box whose
own text says `walls.CONSENT_WORDS` (the page's body is no dialog; a frame's may be: a
consent tool may draw its dialog in a frame of its own); the rules of `toolkit.pages.walls` read the buttons'
labels and say whether a dialog hides the page. `answer_consent` presses the button they
pick (the one that agrees to nothing, else Accept), in the page, and says which it was.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolkit.pages.walls import (
    CONSENT_BUTTONS,
    CONSENT_ROOTS,
    CONSENT_WORDS,
    HIDDEN_ARTICLE_CHARS,
    MAX_DIALOG_CHARS,
    MAX_LABEL_CHARS,
    ConsentChoice,
    ConsentShown,
    button_choice,
    consent_button,
)

if TYPE_CHECKING:
    from playwright.async_api import Frame, Page

ANSWERS = 2
"""Consent dialogs a capture answers, one after the other, before it reads the page: a
dialog may be followed by another (a "pay or accept" choice after a refusal)."""
_BUTTONS_KEY = 'Symbol.for("judgegen.consent")'
_READ = (
    """([roots, named, words, maxDialog, maxLabel, main, articleChars]) => {
  const found = {buttons: [], dialogs: [], chrome: 0, hiddenArticle: false};
  window["""
    + _BUTTONS_KEY
    + """] = [];
  if (!document.body || !(window.innerWidth > 0 && window.innerHeight > 0)) return found;
  const CLICKABLE =
    'button, [role="button"], input[type="button"], input[type="submit"], a';
  const CHROME =
    'nav, header, footer, [role="navigation"], [role="banner"], [role="contentinfo"]';
  const ARTICLE = 'main, article, [role="main"]';
  const vocabulary = new RegExp("\\\\b(?:" + words.join("|") + ")", "i");
  const rootSelector = roots.join(",");
  const up = (node) => node.parentElement || (node.parentNode && node.parentNode.host) || null;
  const drawn = (el) => {
    const box = el.getBoundingClientRect();
    if (box.width < 2 || box.height < 2) return false;
    if (box.right <= 0 || box.left >= window.innerWidth || box.bottom + window.scrollY <= 0) {
      return false;
    }
    return !el.checkVisibility ||
      el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  };
  const clickable = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.matches(CLICKABLE)) clickable.push(el);
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document.body);
  const ownText = (node) => {
    let text = node.innerText || "";
    for (const button of node.querySelectorAll(CLICKABLE)) {
      const label = button.innerText || "";
      if (label) text = text.replace(label, " ");
    }
    return text;
  };
  const memo = new Map();
  const top = main ? document.body : document.documentElement;  // a frame may be the dialog
  const dialogOf = (button) => {
    for (let node = up(button); node && node !== top; node = up(node)) {
      if (node.matches(rootSelector)) return node;
    }
    const path = [];
    let dialog = null;
    for (let node = up(button); node && node !== top; node = up(node)) {
      if (memo.has(node)) {
        dialog = memo.get(node);
        break;
      }
      path.push(node);
      const text = node.innerText || "";
      if (text.length > maxDialog) break;
      if (vocabulary.test(ownText(node))) {
        dialog = node;
        break;
      }
    }
    for (const node of path) memo.set(node, dialog);
    return dialog;
  };
  const buttons = [];
  for (const el of clickable) {
    if (el.tagName === "A") {
      const href = (el.getAttribute("href") || "").trim();
      if (href && !href.startsWith("#") && !/^javascript:/i.test(href)) continue;
    }
    const label = (el.innerText || el.value || el.getAttribute("aria-label") || "").trim();
    if (!label || label.length > maxLabel || !drawn(el)) continue;
    const dialog = dialogOf(el);
    if (!dialog) continue;
    const own = named.find(([selector]) => el.matches(selector));
    buttons.push({el, dialog, label, named: own ? own[1] : null});
  }
  const boxes = [...new Set(buttons.map((b) => b.dialog))];
  const outer = boxes.filter((d) => !boxes.some((o) => o !== d && o.contains(d)));
  const outerOf = (d) => outer.findIndex((o) => o === d || o.contains(d));
  window["""
    + _BUTTONS_KEY
    + """] = buttons.map((b) => b.el);
  found.buttons = buttons.map((b) => [b.label, b.named, Math.max(outerOf(b.dialog), 0)]);
  found.dialogs = outer.map((d) => (d.innerText || "").length);
  if (!main) return found;
  for (const el of document.body.querySelectorAll(CHROME)) {
    const parent = up(el);
    if ((parent && parent.closest(CHROME)) || el.closest(ARTICLE)) continue;
    if (outer.some((d) => d.contains(el))) continue;
    let chars = (el.innerText || "").length;
    for (const d of outer) if (el.contains(d)) chars -= (d.innerText || "").length;
    found.chrome += Math.max(chars, 0);
  }
  found.hiddenArticle = [...document.body.querySelectorAll(ARTICLE)].some((el) =>
    el.checkVisibility && !el.checkVisibility({visibilityProperty: true}) &&
    !outer.some((d) => d.contains(el)) &&
    (el.textContent || "").trim().length >= articleChars);
  return found;
}"""
)
"""Read in one frame what it shows of consent dialogs (see the module's docstring): each
button's [label, the choice a consent tool names it for, its dialog], each dialog's text
size, and in the main frame its menus' text size and whether it holds an article back. The
buttons are kept in the frame for `_PRESS`."""
_PRESS = (
    "(i) => { const buttons = window["
    + _BUTTONS_KEY
    + "]; if (buttons && buttons[i]) buttons[i].click(); }"
)
"""Press the `i`th button `_READ` found, as a click does (a form's submit button submits)."""
_WORD = re.compile(r"[a-z]+")


def _read_args(main: bool) -> list[Any]:
    """`_READ`'s arguments, from the rules' vocabulary (`toolkit.pages.walls`)."""
    assert all(_WORD.fullmatch(word) for word in CONSENT_WORDS)  # a JS pattern's words as is
    return [
        list(CONSENT_ROOTS),
        [list(pair) for pair in CONSENT_BUTTONS],
        list(CONSENT_WORDS),
        MAX_DIALOG_CHARS,
        MAX_LABEL_CHARS,
        main,
        HIDDEN_ARTICLE_CHARS,
    ]


async def read_consent(page: Page) -> tuple[ConsentShown, list[tuple[Frame, int]]]:
    """What `page` shows of consent dialogs, in all its frames, and where each of its buttons
    is (its frame, its index there, for `_PRESS`). A frame that cannot be read (detached, or
    navigating) shows none."""
    from playwright.async_api import Error

    choices: list[ConsentChoice | None] = []
    dialogs: list[int] = []
    dialog_chars: list[int] = []
    where: list[tuple[Frame, int]] = []
    chrome, hidden_article = 0, False
    for frame in page.frames:
        main = frame == page.main_frame
        try:
            found = await frame.evaluate(_READ, _read_args(main))
        except Error:
            continue
        first = len(dialog_chars)
        for index, (label, named, dialog) in enumerate(found["buttons"]):
            choices.append(button_choice(str(label), named))
            dialogs.append(first + int(dialog))
            where.append((frame, index))
        dialog_chars += [int(chars) for chars in found["dialogs"]]
        if main:
            chrome, hidden_article = int(found["chrome"]), bool(found["hiddenArticle"])
    shown = ConsentShown(
        tuple(choices), tuple(dialogs), tuple(dialog_chars), chrome, hidden_article
    )
    return shown, where


async def answer_consent(
    page: Page, page_text: Callable[[], Awaitable[str]]
) -> ConsentChoice | None:
    """Press the button of a consent dialog hiding `page` that `walls.consent_button` picks
    (`page_text` reads what the page shows, read only when a dialog is shown), and say what it
    answered; None when no dialog hides the page, or none can be answered."""
    from playwright.async_api import Error

    shown, where = await read_consent(page)
    if not shown.shown():
        return None
    pick = consent_button(shown, await page_text())
    if pick is None:
        return None
    frame, index = where[pick]
    with contextlib.suppress(Error):  # a press that navigates may end the evaluation
        await frame.evaluate(_PRESS, index)
    return shown.choices[pick]


def most_agreed(first: ConsentChoice | None, second: ConsentChoice | None) -> ConsentChoice | None:
    """Of two answers to consent dialogs, the one that agreed to more: what a page's record
    says the capture agreed to."""
    if "accepted" in (first, second):
        return "accepted"
    return first or second
