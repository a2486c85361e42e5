"""A picture of the windows: `sw.timeline(query)` in a notebook, `write_timeline(sw, query, path)` to a file.

The picture has one horizontal lane per key (the query's GROUP BY keys beside the window
columns; without GROUP BY its PARTITION BY columns; without either, one lane for the stream).
Event time runs left to right. In each lane, from the top:

* the windows, as bars from `window_start` to `window_end` (overlapping windows on separate
  tracks), with a dot for each row counted in them;
* arrival, top to bottom (a replay): one band per recorded arrival batch with the rows that
  arrived in it at their event time; a late row is a red cross, followed by the window it missed
  (a dashed red outline) and why; the key's effective watermark is a blue step line -- the value
  the batch's rows were checked against, moving when the batch commits -- with the time behind it
  shaded; each firing after the batch is a bar over its window, labelled with its firing (EARLY,
  ON_TIME, LATE, FINAL, CHANGES), its op and its values, retractions (-U, -D) hatched;
* the end of input, with the firings it caused.

A query over a finished table without recorded arrival (complete input) has no arrival and no
watermark: its lane shows the windows, the rows and the results.

The modules: model.py (the facts: windows, rows, firings, the watermark per lane), build.py
(running the query through sqlwin and gathering the facts), watermark.py (the watermark drawn,
recomputed from the rows), text.py (times, durations and clauses in words), drawing.py (the
matplotlib picture). matplotlib is an optional extra (`pip install 'sqlwin[timeline]'`);
importing sqlwin never needs it.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

from sqlwin.errors import SqlwinUsageError
from sqlwin.timeline.build import MAX_ROWS, build_timeline
from sqlwin.timeline.drawing import INSTALL_HINT, draw_timeline, require_matplotlib
from sqlwin.timeline.model import Firing, Point, Timeline, Window

if t.TYPE_CHECKING:
    from matplotlib.figure import Figure

Sqlwin = t.Any  # sqlwin.api.Sqlwin, as the annotations name it: the API imports this package (sw.timeline)

__all__ = ["INSTALL_HINT", "MAX_ROWS", "Firing", "Point", "Timeline", "Window", "build_timeline", "draw_timeline",
           "require_matplotlib", "timeline_figure", "write_timeline"]


def timeline_figure(sw: "Sqlwin", query: str, keys: t.Sequence | None = None, max_keys: int = 8,
                    label: str | None = None, width: float = 12.0) -> "Figure":
    """`sw.timeline(query)`: the picture as a matplotlib Figure (Jupyter shows it)."""
    require_matplotlib()
    return draw_timeline(build_timeline(sw, query, keys=keys, max_keys=max_keys, label=label), width=width)


def write_timeline(sw: "Sqlwin", query_text: str, path: str | Path, keys: t.Sequence | None = None,
                   max_keys: int = 8, label: str | None = None, dpi: int = 110) -> Path:
    """Draw `query_text`'s timeline into `path` (PNG, or any format matplotlib's Agg canvas writes:
    .svg, .pdf by the suffix) and return the path. What `sqlwin explain ... --timeline out.png` calls."""
    require_matplotlib()
    path = Path(path)
    figure = timeline_figure(sw, query_text, keys=keys, max_keys=max_keys, label=label)
    if path.parent and not path.parent.exists():
        raise SqlwinUsageError(f"Cannot write the timeline to {path}: no directory {path.parent}",
                               hint="a path in an existing directory, e.g. timeline.png")
    figure.savefig(path, dpi=dpi, bbox_inches="tight")
    return path
