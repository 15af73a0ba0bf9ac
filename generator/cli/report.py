"""`judgegen report`: the metrics table of one agent's results, recomputed from the files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from toolkit.runner.metrics import Summary, compute_summary, format_table
from toolkit.runner.results import SUMMARY_FILE, iter_results


def _previous(agent_dir: Path) -> Summary | None:
    try:
        return Summary.model_validate_json((agent_dir / SUMMARY_FILE).read_bytes())
    except (OSError, ValueError):
        return None


@click.command()
@click.argument("agent_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def report(agent_dir: Path, as_json: bool) -> None:
    """Print Partial Completion, Success Rate and Pass@k for RESULTS/<agent>.

    Metrics follow Mind2Web 2's definitions over complete results; incomplete and excluded
    evaluations are left out and listed. Skipped judges come from the last run's summary.json.

    \b
    Example:
      judgegen report results/my-agent --json

    \b
    Exit codes: 0 every result complete; 1 some results are incomplete; 2 no results found.
    """
    results = list(iter_results(agent_dir))
    if not results:
        raise click.UsageError(
            f"no result files under {agent_dir}/<task>/<answer>.json (pass RESULTS/<agent>)"
        )
    previous = _previous(agent_dir)
    summary = compute_summary(
        agent_dir.name,
        results,
        skipped_judges=previous.skipped_judges if previous else (),
        include_unreviewed=previous.include_unreviewed if previous else False,
    )
    if as_json:
        click.echo(json.dumps(summary.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        click.echo(format_table(summary))
    sys.exit(1 if summary.counts.incomplete else 0)
