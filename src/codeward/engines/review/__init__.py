"""Static review of code: analyzers run as subprocesses, quality gates, and reports.

- :mod:`.analyzers` — ruff, mypy, bandit, radon, vulture and lizard, each turned into issues;
- :mod:`.engine` — runs them in parallel over a set of files;
- :mod:`.selection` — which files (gated directory walks, include/exclude globs);
- :mod:`.summary` — per-file and per-project metrics and the quality score;
- :mod:`.gates` — thresholds with margins; :mod:`.report` — HTML, Markdown and JSON;
- :mod:`.service` — the operations tools and the CLI share; :mod:`.cli` — ``codeward review``.
"""
