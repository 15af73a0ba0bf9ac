"""A run whose LLM endpoint is misconfigured stops (exit 3) at its first call, naming the fix.

A --base-url without its `/v1`, or a model the server does not serve, makes the server answer
every call with HTTP 404: no retry or later call can succeed, so the run stops as it does on a
rejected key, instead of trying every answer and leaving each result incomplete. A server that
does not take the `response_format` every request carries answers each with the same 400: the
run stops after a few. A 400 for one request (an answer too long for the model's context) is
that request's own: its evaluation is incomplete and the run goes on. The real OpenAI SDK
talks to a loopback server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from generator.cli import main
from tests.fixtures.runner.helpers import FIXTURES, result_files, run_args
from tests.fixtures.runner.llm_policy import policy
from tests.llm.stub_api import NOT_FOUND, TOO_LONG, openai_completion
from toolkit.llm.models import LLMRequest, Message
from toolkit.llm.provider import NOT_FOUND_FIX
from toolkit.llm.rejection import REJECTION_THRESHOLD, STRUCTURED_FIXES

ANSWERS = 6
NO_JSON_SCHEMA = {
    "error": {
        "code": 400,
        "message": '"response_format" must be one of "text" or "json_object"',
        "type": "invalid_request_error",
    }
}
"""What llama.cpp's server answers every request asking for a `json_schema` response format."""
OVERSIZED = "OVERSIZED-ANSWER"
"""A marker in one answer: the stub answers a request holding it as too long (HTTP 400)."""


@pytest.fixture
def api() -> Iterator[HTTPServer]:
    """A loopback server with no handlers yet (a test adds its own)."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def answering(request: Request) -> Response:
    """A Chat Completions server answering as the runner's scripted policy does, except for a
    request holding `OVERSIZED`, which it refuses as too long."""
    body = json.loads(request.get_data())
    text = body["messages"][-1]["content"][0]["text"]
    if OVERSIZED in text:
        return Response(json.dumps(TOO_LONG), status=400, content_type="application/json")
    name = body["response_format"]["json_schema"]["name"]
    asked = LLMRequest(model=body["model"], messages=[Message.user(text)], schema_name=name)
    reply = openai_completion(json.dumps(policy(asked)))
    return Response(json.dumps(reply), content_type="application/json")


def many_answers(work: Path, oversized: int | None = None, numbered: bool = False) -> Path:
    """An answers folder of `ANSWERS` copies of one python_match answer; answer number
    `oversized`, if given, holds the `OVERSIZED` marker; `numbered` copies end with their
    number, so each asks the model something else."""
    text = (FIXTURES / "answers" / "alpha" / "python_match" / "answer_1.md").read_text()
    folder = work / "many" / "alpha" / "python_match"
    folder.mkdir(parents=True)
    for index in range(1, ANSWERS + 1):
        extra = f"\n{OVERSIZED}\n" if index == oversized else ""
        extra += f"\n(copy {index})\n" if numbered else ""
        (folder / f"answer_{index}.md").write_text(text + extra)
    return work / "many"


def run_on(
    work: Path, base_url: str, answers: Path, *extra: str
) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """`judgegen run --json` of `answers` on the OpenAI provider at `base_url` (one LLM call
    and one evaluation at a time): the CLI's outcome, its record and the ledger's rows."""
    args = run_args(work, "--include-unreviewed", "--json", *extra, answers=answers)
    at = args.index("--backend")
    del args[at : at + 2]
    args += ["--provider", "openai", "--base-url", base_url, "--concurrency", "1", "--jobs", "1"]
    env = {
        "JUDGEGEN_CACHE_PATH": str(work / "llm-cache.sqlite"),
        "JUDGEGEN_LEDGER_PATH": str(work / "ledger.jsonl"),
        "JUDGEGEN_LLM_MAX_RETRIES": "0",
        "OPENAI_API_KEY": "sk-openai-canary-5d8a2f6e0c9b",
        "OPENAI_BASE_URL": None,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    outcome = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    rows = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    return outcome, json.loads(outcome.stdout), rows


@pytest.mark.parametrize("mode", [["--no-sandbox"], []], ids=["in_process", "sandboxed"])
def test_a_run_on_a_base_url_answering_404_stops_at_its_first_call_with_exit_3_naming_the_fix(
    work: Path, api: HTTPServer, mode: list[str]
) -> None:
    api.expect_request(re.compile(".*")).respond_with_json(NOT_FOUND, status=404)
    base_url = api.url_for("").rstrip("/")  # the server's API is under /v1
    outcome, record, rows = run_on(work, base_url, many_answers(work), *mode)
    assert outcome.exit_code == 3, outcome.stderr
    stopped = record["stopped"]
    assert stopped.startswith("LLMError: LLM call failed (not_found, HTTP 404)")
    assert f"POST {base_url}/chat/completions" in stopped and "'o4-mini'" in stopped
    assert json.dumps(NOT_FOUND) in stopped and f"Fix: {NOT_FOUND_FIX}" in stopped
    assert "stopped: LLMError: LLM call failed (not_found" in outcome.stderr
    assert "ends in /v1" in outcome.stderr
    assert len(api.log) == 1 and [row["error"] for row in rows] == ["not_found"]
    assert (record["evaluated"], record["not_started"]) == (1, ANSWERS - 1)


@pytest.mark.parametrize("mode", [["--no-sandbox"], []], ids=["in_process", "sandboxed"])
def test_a_run_on_a_server_refusing_response_format_stops_after_a_few_calls_naming_the_fix(
    work: Path, api: HTTPServer, mode: list[str]
) -> None:
    api.expect_request("/v1/chat/completions").respond_with_json(NO_JSON_SCHEMA, status=400)
    base_url = api.url_for("/v1").rstrip("/")
    answers = many_answers(work, numbered=True)
    outcome, record, rows = run_on(work, base_url, answers, *mode)
    assert outcome.exit_code == 3, outcome.stderr
    stopped = record["stopped"]
    assert stopped.startswith("LLMError: LLM call failed (rejected, HTTP 400)")
    assert f"POST {base_url}/chat/completions for model 'o4-mini'" in stopped
    assert NO_JSON_SCHEMA["error"]["message"] in stopped and STRUCTURED_FIXES["openai"] in stopped
    assert "--schema-mode json" in outcome.stderr
    assert len(api.log) == REJECTION_THRESHOLD
    assert [row["error"] for row in rows] == ["request", "request", "rejected"]
    assert (record["evaluated"], record["not_started"]) == (3, ANSWERS - 3)  # a call each


def test_a_400_for_one_oversized_request_leaves_its_answer_incomplete_and_the_run_goes_on(
    work: Path, api: HTTPServer
) -> None:
    api.expect_request("/v1/chat/completions", method="POST").respond_with_handler(answering)
    answers = many_answers(work, oversized=2)
    outcome, record, rows = run_on(work, api.url_for("/v1"), answers, "--no-sandbox")
    assert outcome.exit_code == 1, outcome.stderr
    assert record["stopped"] is None and record["not_started"] == 0
    assert record["evaluated"] == ANSWERS
    assert [row["error"] for row in rows if row["error"]] == ["request"]
    results = result_files(work / "results")
    incomplete = [name for name, r in results.items() if r["status"] == "incomplete"]
    assert incomplete == ["alpha/python_match/answer_2.json"]
    assert sum(r["status"] == "complete" for r in results.values()) == ANSWERS - 1
