"""Review tooling: the review record, human labels, mutation testing, rubric and code diffs,
the HTML report, the review runs behind them, and regenerating a reviewed judge."""
