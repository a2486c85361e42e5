"""Drawing a Timeline with matplotlib: one lane (an Axes) per key sharing the event-time axis; in
each lane the windows on tracks, a band per arrival batch with its rows, late rows and firings,
the watermark as a step line down the bands, and the end of input.

matplotlib is an optional extra (`pip install 'sqlwin[timeline]'`): it is imported only when a
picture is drawn. Files are written with the Agg canvas, whatever pyplot's backend is.
"""

from __future__ import annotations

import io
import typing as t
from dataclasses import dataclass

from sqlwin.errors import SqlwinUsageError
from sqlwin.ir import BY_SQL_NAME
from sqlwin.timeline.text import EPOCH_MS_AS_DATE, duration_text, time_text

if t.TYPE_CHECKING:
    from matplotlib.figure import Figure

# The model's classes (sqlwin/timeline/model.py), as the annotations here name them: the model
# imports this module for Timeline.figure(), so this one reads them without importing them.
Timeline = Window = Point = Firing = t.Any

INSTALL_HINT = "pip install 'sqlwin[timeline]'"
RETRACTIONS = ("-U", "-D")
FIRING_COLOURS = {"early": "#1f77b4", "on_time": "#2ca02c", "late": "#d62728", "final": "#555555",
                  "changes": "#9467bd"}
WINDOW_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7",
                  "#9c755f", "#e15759", "#bab0ac")
WATERMARK_COLOUR = "#1f5fbf"
LATE_COLOUR = "#d62728"


def require_matplotlib() -> None:
    try:
        import matplotlib
        del matplotlib  # only whether it imports
    except ImportError as err:
        raise SqlwinUsageError(
            "A timeline is drawn with matplotlib, which is not installed (an optional extra of sqlwin)",
            hint=INSTALL_HINT) from err


_FIGURE_CLASS = None


def _figure_class():
    """matplotlib's Figure, with a PNG for Jupyter even when pyplot's inline backend is not loaded."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        from matplotlib.figure import Figure

        class TimelineFigure(Figure):
            def _repr_png_(self):
                buffer = io.BytesIO()
                self.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
                return buffer.getvalue()

        _FIGURE_CLASS = TimelineFigure
    return _FIGURE_CLASS


@dataclass
class _Slot:
    kind: str  # windows | rows | late | firing | end
    top: float
    height: float
    batch: int | None = None
    item: t.Any = None

    @property
    def middle(self) -> float:
        return self.top + self.height / 2

    @property
    def bottom(self) -> float:
        return self.top + self.height


def _tracks(windows: list[Window]) -> list[int]:
    """A track per window so that overlapping windows never share one (first fit, by start)."""
    ends: list[float] = []
    tracks = []
    for w in windows:
        start = -float("inf") if w.start is None else w.start
        for i, end in enumerate(ends):
            if end <= start:
                ends[i] = float("inf") if w.end is None else w.end + (1 if w.inclusive_end else 0)
                tracks.append(i)
                break
        else:
            ends.append(float("inf") if w.end is None else w.end + (1 if w.inclusive_end else 0))
            tracks.append(len(ends) - 1)
    return tracks


def _layout(timeline: Timeline, lane: tuple) -> tuple[list[_Slot], list[int]]:
    windows = timeline.windows_of(lane)
    tracks = _tracks(windows)
    slots = [_Slot("windows", 1.4 * i, 1.4, item=[w for w, k in zip(windows, tracks) if k == i])
             for i in range(max(tracks) + 1 if tracks else 1)]
    y = slots[-1].bottom + 0.5
    points, firings = timeline.points_of(lane), timeline.firings_of(lane)
    replay = timeline.mode == "replay"
    bands = timeline.batches_of(lane) if replay else [None]
    for batch in bands:
        slots.append(_Slot("rows", y, 1.2, batch, [p for p in points if p.batch == batch]))
        y += 1.2
        for p in points:
            if p.batch == batch and p.late:
                slots.append(_Slot("late", y, 0.9, batch, p))
                y += 0.9
        if replay:
            for f in firings:
                if f.batch == batch:
                    slots.append(_Slot("firing", y, 0.9, batch, f))
                    y += 0.9
        y += 0.3
    slots.append(_Slot("end", y, 0.9, None))
    y += 0.9
    for f in firings:
        if f.batch is None:
            slots.append(_Slot("firing", y, 0.9, None, f))
            y += 0.9
    return slots, tracks


def _window_colours(timeline: Timeline) -> dict[Window, str]:
    colours = {}
    for lane in timeline.lanes:
        for i, w in enumerate(timeline.windows_of(lane)):
            colours[w] = WINDOW_COLOURS[i % len(WINDOW_COLOURS)]
    return colours


def _x_range(timeline: Timeline) -> tuple[float, float]:
    values = [v for w in timeline.windows for v in (w.start, w.end) if v is not None]
    values += [p.time for p in timeline.points if p.time is not None]
    values += [m for steps in timeline.watermarks.values() for _, m in steps if m is not None]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    span = (high - low) or 1
    return low - 0.04 * span, high + 0.04 * span


def draw_timeline(timeline: Timeline, width: float = 12.0) -> "Figure":
    """Draw the facts: one lane (an Axes) per key, sharing the event-time axis."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    layouts = [_layout(timeline, lane) for lane in timeline.lanes]
    heights = [slots[-1].bottom + 0.2 for slots, _ in layouts]
    total = sum(heights)
    figure = _figure_class()(figsize=(width, min(60.0, 1.9 + 0.3 * total + 0.35 * len(layouts))),
                             layout="constrained")
    FigureCanvasAgg(figure)  # Agg whatever pyplot's backend: savefig and Jupyter's PNG need no display
    axes = figure.subplots(len(layouts), 1, sharex=True, squeeze=False,
                           gridspec_kw={"height_ratios": heights})[:, 0]
    colours = _window_colours(timeline)
    x_low, x_high = _x_range(timeline)
    for ax, lane, (slots, tracks), height in zip(axes, timeline.lanes, layouts, heights):
        _draw_lane(ax, timeline, lane, slots, colours, (x_low, x_high), height)
    _time_axis(axes[-1], timeline, x_low, x_high)
    title = "sqlwin timeline — " + timeline.description
    notes = list(timeline.notes)
    if timeline.hidden_lanes:
        notes.append(f"{timeline.hidden_lanes} more key(s) not drawn (keys=[...] / max_keys choose)")
    figure.suptitle(title + ("\n" + "; ".join(notes) if notes else ""), fontsize=10, x=0.01, ha="left")
    _legend(figure, timeline)
    return figure


def _lane_name(timeline: Timeline, lane: tuple) -> str:
    if not lane:
        return "all rows" if timeline.mode != "replay" else "the stream"
    return ", ".join(f"{n} = {v}" for n, v in zip(timeline.lane_names, lane))


TEXT_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.0}


def _draw_lane(ax, timeline: Timeline, lane: tuple, slots: list[_Slot], colours, x_range, height) -> None:
    from matplotlib.patches import Rectangle

    x_low, x_high = x_range
    span = x_high - x_low
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(height, 0)
    ax.set_title(_lane_name(timeline, lane), loc="left", fontsize=10, fontweight="bold")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ticks, labels = [], []

    def bar(window: Window, slot: _Slot, half: float = 0.28, start=None, end=None, **style):
        start = (x_low if window.start is None else window.start) if start is None else start
        end = (x_high if window.end is None else window.end) if end is None else end
        ax.add_patch(Rectangle((start, slot.middle - half), end - start, 2 * half, **style))
        return start, end

    # Windows, with a dot for every row counted in them (a session: solid up to its last row,
    # then its gap, lighter).
    points = timeline.points_of(lane)
    window_slots = [s for s in slots if s.kind == "windows"]
    ticks.append((window_slots[0].top + window_slots[-1].bottom) / 2)
    labels.append("windows")
    for slot in window_slots:
        for w in slot.item:
            colour = colours[w]
            members = sorted(p.time for p in points if w in p.windows and p.time is not None)
            if timeline.replaced(w):
                start, end = bar(w, slot, 0.42, facecolor="white", edgecolor=colour, linewidth=1.2,
                                 linestyle="--", hatch="////", alpha=0.6)
            elif BY_SQL_NAME[timeline.function].trailing_gap and members and w.end is not None:
                bar(w, slot, 0.42, end=members[-1], facecolor=colour, alpha=0.45, edgecolor="none")
                bar(w, slot, 0.42, start=members[-1], facecolor=colour, alpha=0.15, edgecolor="none")
                start, end = bar(w, slot, 0.42, facecolor="none", edgecolor=colour, linewidth=1.5)
            else:
                start, end = bar(w, slot, 0.42, facecolor=colour, alpha=0.35, edgecolor=colour, linewidth=1.5)
            if (end - start) > 0.12 * span:
                words = timeline.window_text(w) + (" replaced by a merge" if timeline.replaced(w) else "")
                ax.text(start + 0.006 * span, slot.middle - 0.16, words, ha="left", va="center", fontsize=7.5,
                        color="#222222", clip_on=True, bbox={**TEXT_BOX, "alpha": 0.6, "pad": 0.5})
            ax.plot(members, [slot.middle + 0.2] * len(members), "o", color="#222222", markersize=3.5, zorder=4)
    ax.axhline(window_slots[-1].bottom + 0.25, color="#cccccc", linewidth=0.8)

    # The watermark: a step line down the arrival bands, the time behind it shaded.
    if timeline.watermarks.get(lane):
        _draw_watermark(ax, timeline, lane, slots, x_low, x_high)

    label_rows = len(points) <= 40
    for slot in slots:
        if slot.kind == "rows":
            ticks.append(slot.middle)
            labels.append("rows" if slot.batch is None else f"batch {slot.batch}")
            for p in slot.item:
                if p.time is None:
                    continue
                if p.fully_late:
                    ax.plot(p.time, slot.middle, "X", color=LATE_COLOUR, markersize=11, zorder=6,
                            markeredgecolor="white", markeredgewidth=0.8)
                else:
                    live = [w for w in p.windows if not timeline.replaced(w)] or list(p.windows)
                    colour = colours.get(live[0], "#999999") if live else "#999999"
                    ax.plot(p.time, slot.middle, "o", color=colour, markersize=8, zorder=6,
                            markeredgecolor=LATE_COLOUR if p.late else "#222222",
                            markeredgewidth=2 if p.late else 0.8)
            if label_rows:  # rows at the same time share one label
                by_time: dict[int, list[Point]] = {}
                for p in slot.item:
                    if p.label and p.time is not None:
                        by_time.setdefault(p.time, []).append(p)
                for time, same in by_time.items():
                    ax.text(time, slot.middle - 0.3, ", ".join(p.label for p in same), ha="center", va="bottom",
                            fontsize=8, zorder=7, color=LATE_COLOUR if any(p.late for p in same) else "#222222")
        elif slot.kind == "late":
            _draw_late(ax, timeline, slot, bar)
        elif slot.kind == "firing":
            f: Firing = slot.item
            colour = colours.get(f.window, "#999999")
            retraction = f.op in RETRACTIONS
            edge = FIRING_COLOURS.get(f.firing, "#333333")
            start, end = bar(f.window, slot, facecolor="white" if retraction else colour, alpha=0.9,
                             edgecolor=edge, linewidth=1.8, hatch="////" if retraction else None,
                             linestyle="--" if retraction else "-")
            words = f"{f.firing.upper()} {f.op}  {f.values}" if timeline.mode == "replay" else f.values
            ax.text(end + 0.008 * span, slot.middle, words.strip(), ha="left", va="center", fontsize=8.5,
                    color=edge, fontweight="bold", clip_on=False, zorder=9, bbox=TEXT_BOX)
        elif slot.kind == "end":
            ticks.append(slot.middle)
            labels.append("end of input" if timeline.mode == "replay" else "results (end of input)")
            ax.axhline(slot.top, color="#cccccc", linewidth=0.8)
    ax.set_yticks(ticks, labels, fontsize=8.5)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#e3e3e3", linewidth=0.8, zorder=0)
    ax.set_axisbelow(True)


def _draw_late(ax, timeline: Timeline, slot: _Slot, bar) -> None:
    """A late row's own line: the window(s) it missed, dashed red, and why."""
    p: Point = slot.item
    span = ax.get_xlim()[1] - ax.get_xlim()[0]
    mark = timeline.watermark_before(p.lane, p.batch) if p.batch is not None else None
    reasons, missed = [], []
    right = p.time
    for w in p.missed:
        if w is None:
            continue
        start, end = bar(w, slot, 0.3, facecolor="none", edgecolor=LATE_COLOUR, linewidth=1.6, linestyle="--")
        right = max(right, end)
        closed = timeline.closed_after(w)
        if timeline.lateness_rule == "before_watermark":
            missed.append(timeline.window_text(w))
        elif closed is not None:
            reasons.append(f"{timeline.window_text(w)} closed after batch {closed}")
            if mark is not None:
                reasons[-1] += f" (watermark {timeline.time_text(mark)})"
        else:
            reasons.append(f"{timeline.window_text(w)} had closed")
    if timeline.lateness_rule == "before_watermark":
        behind = "behind the watermark" + (f" {timeline.time_text(mark)}" if mark is not None else "")
        reasons = [behind] + ([f"missed {', '.join(missed)}"] if missed else [])
    elif not reasons:
        reasons.append("the session it would open had already closed")
    ax.plot(p.time, slot.middle, "x", color=LATE_COLOUR, markersize=7, zorder=6, alpha=0.7)
    who = f"{p.label}: " if p.label else ""
    text = f"{who}late by {duration_text(p.late_by)}: " + "; ".join(reasons)
    if not p.fully_late:
        text += " (counted in its open windows)"
    ax.text(right + 0.008 * span, slot.middle, text, ha="left", va="center", fontsize=8.5, color=LATE_COLOUR,
            clip_on=False, zorder=9, bbox=TEXT_BOX)


def _draw_watermark(ax, timeline: Timeline, lane: tuple, slots: list[_Slot], x_low, x_high) -> None:
    """In batch b's band the line stands where the rows of b were checked (the watermark after the
    batches before it), steps when b commits, and stays there through b's firings."""
    steps = dict(timeline.watermarks.get(lane, []))
    bands: list[list] = []  # batch, top, commit, bottom
    current = None
    for slot in slots:
        if slot.kind == "rows":
            current = [slot.batch, slot.top, slot.bottom, slot.bottom]
            bands.append(current)
        elif slot.kind == "late" and current is not None:
            current[2] = current[3] = slot.bottom
        elif slot.kind == "firing" and current is not None and slot.batch == current[0]:
            current[3] = slot.bottom
    end = next(s for s in slots if s.kind == "end")
    xs, ys = [], []
    for i, (batch, top, commit, bottom) in enumerate(bands):
        before = timeline.watermark_before(lane, batch)
        after = timeline.watermark_before(lane, batch + 1)
        next_top = bands[i + 1][1] if i + 1 < len(bands) else end.top
        for x, y in ((before, top), (before, commit), (after, commit), (after, next_top)):
            xs.append(x)
            ys.append(y)
        if batch in steps and after is not None and after != before:
            words = f"{timeline.clock_name} {timeline.time_text(after)}"
            ax.text(after + 0.004 * (x_high - x_low), commit - 0.03, words, ha="left", va="bottom", fontsize=7.5,
                    color=WATERMARK_COLOUR, zorder=8, clip_on=False)
    segments, run = [], []
    for x, y in zip(xs, ys):
        if x is None:
            if run:
                segments.append(run)
            run = []
        else:
            run.append((min(max(x, x_low), x_high), y))
    if run:
        segments.append(run)
    for run in segments:
        x, y = [p[0] for p in run], [p[1] for p in run]
        ax.plot(x, y, color=WATERMARK_COLOUR, linewidth=2, zorder=10, solid_joinstyle="miter", alpha=0.9)
        ax.fill_betweenx(y, x_low, x, color=WATERMARK_COLOUR, alpha=0.08, linewidth=0, zorder=1)
    if xs and xs[-1] is not None:  # the end of input closes everything: the watermark goes to +inf
        last = min(max(xs[-1], x_low), x_high)
        ax.annotate("", xy=(x_high, end.top), xytext=(last, end.top),
                    arrowprops={"arrowstyle": "->", "color": WATERMARK_COLOUR, "linewidth": 1.8}, zorder=5)
        ax.text(x_high, end.top + 0.06, "end of input: every window closes", ha="right", va="top", fontsize=7.5,
                color=WATERMARK_COLOUR)


def _time_axis(ax, timeline: Timeline, x_low: float, x_high: float) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

    bounds = sorted({v for w in timeline.windows for v in (w.start, w.end) if v is not None})
    kept: list[int] = []
    for value in bounds:  # window bounds as ticks, but never two labels on top of each other
        if not kept or value - kept[-1] >= 0.06 * (x_high - x_low):
            kept.append(value)
    if 2 <= len(kept) <= 16:
        ax.xaxis.set_major_locator(FixedLocator(kept))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(10))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: timeline.time_text(int(round(v)))))
    ax.tick_params(axis="x", labelsize=8.5)
    if timeline.time_kind == "timestamp" or abs(x_high) >= EPOCH_MS_AS_DATE:
        day = time_text(int((x_low + x_high) / 2), "timestamp", timeline.time_zone, with_date=True)[:10]
        unit = "epoch milliseconds, " if timeline.time_kind == "epoch_ms" else ""
        ax.set_xlabel(f"{timeline.time_name} ({unit}{day}, {timeline.time_zone})", fontsize=9)
    else:
        ax.set_xlabel(f"{timeline.time_name} (epoch milliseconds)", fontsize=9)


def _legend(figure, timeline: Timeline) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=WINDOW_COLOURS[0], alpha=0.35, edgecolor=WINDOW_COLOURS[0],
                     label="window (dots: its rows)"),
               Line2D([], [], marker="o", linestyle="", color=WINDOW_COLOURS[0], markeredgecolor="#222222",
                      label="row (colour: its window)")]
    if BY_SQL_NAME[timeline.function].trailing_gap:
        handles.append(Patch(facecolor=WINDOW_COLOURS[0], alpha=0.15, edgecolor=WINDOW_COLOURS[0],
                             label="session: the gap after its last row"))
    if any(p.late for p in timeline.points):
        handles += [Line2D([], [], marker="X", linestyle="", color=LATE_COLOUR, markersize=9, label="late row"),
                    Patch(facecolor="none", edgecolor=LATE_COLOUR, linestyle="--", label="window it missed")]
    if timeline.watermarks:
        word = "processing time" if timeline.processing_time else "watermark (effective)"
        handles += [Line2D([], [], color=WATERMARK_COLOUR, linewidth=2, label=f"{word}, per arrival batch"),
                    Patch(facecolor=WATERMARK_COLOUR, alpha=0.12, label=f"behind the {word.split(' (')[0]}")]
    firings = {f.firing for f in timeline.firings}
    for firing in ("early", "on_time", "late", "changes", "final"):
        if firing in firings:
            word = f"firing {firing.upper()}" if timeline.mode == "replay" else "result (at the end of input)"
            handles.append(Patch(facecolor="white", edgecolor=FIRING_COLOURS[firing], linewidth=2, label=word))
    if any(f.op in RETRACTIONS for f in timeline.firings):
        handles.append(Patch(facecolor="white", edgecolor="#333333", hatch="////", linestyle="--",
                             label="retraction (−U / −D)"))
    figure.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles)), fontsize=8.5,
                  frameon=False)
