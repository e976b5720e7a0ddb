"""The p50/p90 table the latency benches print, each row a ratio to the baseline row."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence


def p50_p90(times: Sequence[float]) -> tuple[float, float]:
    """Median and 90th percentile (nearest rank) of ``times`` (milliseconds)."""
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


def print_table(rows: Mapping[str, Sequence[float]], base: float, label: str, ratio: str,
                extra: Mapping[str, str] | None = None) -> None:
    """One line per row: p50, p90, p50 / ``base``, and ``extra[name]`` when given."""
    width = max(len(label), *(len(name) for name in rows))
    print(f"{label:<{width}} {'p50 ms':>8} {'p90 ms':>8} {ratio:>7}" + (f" {'warm':>6}" if extra else ""))
    for name, times in rows.items():
        p50, p90 = p50_p90(times)
        tail = f" {extra[name]:>6}" if extra else ""
        print(f"{name:<{width}} {p50:>8.2f} {p90:>8.2f} {p50 / base:>7.2f}{tail}")
