"""Charts as inline SVG, drawn in Python: no script, no network, nothing to load.

Every chart is an ``<svg class="chart" data-chart="NAME">``; every bar (or bar segment) is a
``<rect class="bar">`` carrying ``data-label`` and ``data-value`` and a ``<title>`` tooltip,
so the numbers are both visible and machine-checkable in the rendered page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

FONT = "font-family=\"system-ui, 'DejaVu Sans', 'Liberation Sans', sans-serif\""
AXIS_COLOR = "#9aa4b2"
TEXT_COLOR = "#1f2933"
MUTED_COLOR = "#52606d"


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: float
    color: str
    caption: str = ""
    """Text under the bar (default: the label)."""


@dataclass(frozen=True, slots=True)
class StackedRow:
    label: str
    segments: tuple[Bar, ...]

    @property
    def total(self) -> float:
        return sum(segment.value for segment in self.segments)


def _number(value: float) -> str:
    return f"{value:g}"


def _open(name: str, title: str, width: int, height: int) -> list[str]:
    return [
        f'<svg class="chart" data-chart="{escape(name)}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{escape(title)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<text x="12" y="22" {FONT} font-size="15" font-weight="600" fill="{TEXT_COLOR}">{escape(title)}</text>',
    ]


def column_chart(name: str, title: str, bars: Sequence[Bar], *, width: int = 460, height: int = 260,
                 empty_text: str = "nothing to show") -> str:
    """Vertical bars, one per category, with the value above each bar."""
    parts = _open(name, title, width, height)
    left, right, top, bottom = 40, 12, 44, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((bar.value for bar in bars), default=0)
    base_y = top + plot_h
    parts.append(f'<line x1="{left}" y1="{base_y}" x2="{width - right}" y2="{base_y}" stroke="{AXIS_COLOR}"/>')
    slot = plot_w / max(len(bars), 1)
    bar_w = min(56.0, slot * 0.62)
    for i, bar in enumerate(bars):
        h = 0.0 if peak <= 0 else plot_h * bar.value / peak
        x = left + slot * i + (slot - bar_w) / 2
        y = base_y - h
        parts.append(
            f'<rect class="bar" data-label="{escape(bar.label)}" data-value="{_number(bar.value)}" '
            f'x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{max(h, 0.0):.1f}" rx="3" fill="{bar.color}">'
            f'<title>{escape(bar.label)}: {_number(bar.value)}</title></rect>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{y - 6:.1f}" text-anchor="middle" {FONT} font-size="12" '
                     f'fill="{TEXT_COLOR}">{_number(bar.value)}</text>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{base_y + 18}" text-anchor="middle" {FONT} '
                     f'font-size="12" fill="{MUTED_COLOR}">{escape(bar.caption or bar.label)}</text>')
    if peak <= 0:
        parts.append(f'<text class="empty" x="{width / 2:.0f}" y="{top + plot_h / 2:.0f}" text-anchor="middle" '
                     f'{FONT} font-size="13" fill="{MUTED_COLOR}">{escape(empty_text)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def stacked_bar_chart(name: str, title: str, rows: Sequence[StackedRow], legend: Sequence[Bar], *,
                      width: int = 940, empty_text: str = "nothing to show") -> str:
    """Horizontal bars, one per row, split into coloured segments, with a legend."""
    row_h, gap, top, label_w, right = 22, 8, 64, 330, 60
    height = top + max(len(rows), 1) * (row_h + gap) + 16
    parts = _open(name, title, width, height)
    x = 12.0
    for item in legend:
        parts.append(f'<rect x="{x:.0f}" y="34" width="12" height="12" rx="2" fill="{item.color}"/>')
        parts.append(f'<text x="{x + 17:.0f}" y="45" {FONT} font-size="12" fill="{MUTED_COLOR}">'
                     f'{escape(item.label)}</text>')
        x += 24 + 7.5 * len(item.label)
    peak = max((row.total for row in rows), default=0)
    plot_w = width - label_w - right
    for i, row in enumerate(rows):
        y = top + i * (row_h + gap)
        shown = row.label if len(row.label) <= 48 else "…" + row.label[-47:]
        parts.append(f'<text x="{label_w - 10}" y="{y + row_h * 0.7:.1f}" text-anchor="end" {FONT} font-size="12" '
                     f'fill="{TEXT_COLOR}"><title>{escape(row.label)}</title>{escape(shown)}</text>')
        cursor = float(label_w)
        for segment in row.segments:
            if segment.value <= 0:
                continue
            w = plot_w * segment.value / peak
            parts.append(
                f'<rect class="bar" data-row="{escape(row.label)}" data-label="{escape(segment.label)}" '
                f'data-value="{_number(segment.value)}" x="{cursor:.1f}" y="{y}" width="{w:.1f}" height="{row_h}" '
                f'fill="{segment.color}"><title>{escape(row.label)} — {escape(segment.label)}: '
                f'{_number(segment.value)}</title></rect>')
            cursor += w
        parts.append(f'<text x="{cursor + 6:.1f}" y="{y + row_h * 0.7:.1f}" {FONT} font-size="12" '
                     f'fill="{TEXT_COLOR}">{_number(row.total)}</text>')
    if not rows:
        parts.append(f'<text class="empty" x="{width / 2:.0f}" y="{top + 14}" text-anchor="middle" {FONT} '
                     f'font-size="13" fill="{MUTED_COLOR}">{escape(empty_text)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
