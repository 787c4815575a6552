"""Draws deploy/grafana-dashboard.json as a PNG from a Prometheus server's data.

Usage: render_dashboard.py DASHBOARD PROMETHEUS_URL START END INSTANT STEP RATE_INTERVAL SUBTITLE PNG
(times in Unix seconds: time series span START..END, stat and table panels show INSTANT).

Every panel's queries are evaluated by Prometheus itself (its HTTP API), over the time range
given; only the drawing is ours (matplotlib), laid out on the dashboard's own grid with its
titles, units, legends and thresholds. Grafana variables take their "All" values and
$__rate_interval the given window. Used by scripts/render-dashboard.
"""

import json
import sys
import urllib.parse
import urllib.request

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.dates import DateFormatter  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

BACKGROUND = "#111217"
PANEL = "#181b1f"
BORDER = "#2c3235"
TEXT = "#ccccdc"
MUTED = "#8e8e8e"
PALETTE = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#fade2a",
           "#96d98d", "#ffb357", "#ca95e5", "#ff7383"]
COLORS = {"green": "#73bf69", "red": "#f2495c", "orange": "#ff9830", "yellow": "#fade2a"}


def query(server, path, params):
    url = f"{server}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=30) as reply:
        body = json.load(reply)
    if body["status"] != "success":
        raise RuntimeError(f"{url}: {body}")
    return body["data"]["result"]


def expand(expr, rate_interval):
    return (expr.replace("$__rate_interval", rate_interval)
            .replace('=~"$instance"', '=~".*"').replace('=~"$network"', '=~".*"'))


def legend(fmt, metric):
    out = fmt or "{{__name__}}"
    for key, value in metric.items():
        out = out.replace("{{" + key + "}}", value)
    while "{{" in out:
        start = out.index("{{")
        out = out[:start] + out[out.index("}}", start) + 2:]
    return " ".join(out.split())


def fmt_value(value, unit):
    if value is None:
        return "No data"
    if unit == "s":
        if value >= 3600:
            return f"{value / 3600:.1f} h"
        if value >= 60:
            return f"{value / 60:.1f} min"
        return f"{value:.0f} s" if value >= 10 else f"{value:.2f} s"
    if unit == "percentunit":
        return f"{value * 100:.0f}%"
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:.2f}"


def threshold_color(value, steps):
    color = "green"
    for step in steps:
        if step["value"] is None or (value is not None and value >= step["value"]):
            color = step["color"]
    return COLORS.get(color, color)


def frame(ax, title):
    ax.set_facecolor(PANEL)
    for spine in ax.spines.values():
        spine.set_color(BORDER)
    ax.set_title(title, loc="left", color=TEXT, fontsize=9, fontweight="bold", pad=6)
    ax.title.set_x(0.0)


def draw_stat(ax, panel, server, instant, rate_interval):
    frame(ax, panel["title"])
    target = panel["targets"][0]
    result = query(server, "query", {"query": expand(target["expr"], rate_interval), "time": instant})
    value = float(result[0]["value"][1]) if result else None
    defaults = panel["fieldConfig"]["defaults"]
    ax.set_facecolor(threshold_color(value, defaults["thresholds"]["steps"]) if value is not None else PANEL)
    ax.text(0.5, 0.42, fmt_value(value, defaults.get("unit")), ha="center", va="center",
            color="white", fontsize=22, fontweight="bold", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def draw_timeseries(ax, panel, server, start, end, step, rate_interval):
    frame(ax, panel["title"])
    unit = panel["fieldConfig"]["defaults"].get("unit")
    stacked = panel["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal"
    series = []
    for target in panel["targets"]:
        result = query(server, "query_range", {"query": expand(target["expr"], rate_interval),
                                               "start": start, "end": end, "step": step})
        for item in result:
            points = [(datetime.fromtimestamp(float(t), tz=timezone.utc), float(v)) for t, v in item["values"]]
            series.append((legend(target.get("legendFormat"), item["metric"]), points))
    series.sort(key=lambda s: s[0])
    if stacked and series:
        times = sorted({t for _, points in series for t, _ in points})
        bottom = [0.0] * len(times)
        for i, (name, points) in enumerate(series):
            values = dict(points)
            top = [b + values.get(t, 0.0) for b, t in zip(bottom, times)]
            color = PALETTE[i % len(PALETTE)]
            ax.fill_between(times, bottom, top, color=color, alpha=0.35, linewidth=0)
            ax.plot(times, top, color=color, linewidth=1.2, label=name)
            bottom = top
    else:
        for i, (name, points) in enumerate(series):
            color = PALETTE[i % len(PALETTE)]
            times = [t for t, _ in points]
            values = [v for _, v in points]
            ax.plot(times, values, color=color, linewidth=1.5, label=name)
            ax.fill_between(times, values, color=color, alpha=0.08, linewidth=0)
    ax.set_ylim(bottom=0)
    if unit == "percentunit":
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax.xaxis.set_major_formatter(DateFormatter("%H:%M:%S"))
    ax.set_xlim(datetime.fromtimestamp(float(start), tz=timezone.utc), datetime.fromtimestamp(float(end), tz=timezone.utc))
    ax.tick_params(colors=MUTED, labelsize=7)
    ax.grid(color=BORDER, linewidth=0.5)
    if series:
        ax.legend(loc="upper left", fontsize=6.5, frameon=False, labelcolor=TEXT, ncol=2)
    else:
        ax.text(0.5, 0.5, "No data", ha="center", va="center", color=MUTED, transform=ax.transAxes)


def draw_table(ax, panel, server, instant, rate_interval):
    frame(ax, panel["title"])
    ax.set_xticks([])
    ax.set_yticks([])
    result = query(server, "query", {"query": expand(panel["targets"][0]["expr"], rate_interval), "time": instant})
    rows = sorted((r["metric"].get("instance", ""), r["metric"].get("check", "")) for r in result)
    ax.text(0.01, 0.86, "node", color=MUTED, fontsize=8, fontweight="bold", transform=ax.transAxes)
    ax.text(0.2, 0.86, "check", color=MUTED, fontsize=8, fontweight="bold", transform=ax.transAxes)
    if not rows:
        ax.text(0.5, 0.45, "No failing check", ha="center", color=MUTED, fontsize=9, transform=ax.transAxes)
    for i, (node, check) in enumerate(rows[:5]):
        y = 0.70 - i * 0.15
        ax.text(0.01, y, node, color=TEXT, fontsize=8, transform=ax.transAxes)
        ax.text(0.2, y, check, color=TEXT, fontsize=8, transform=ax.transAxes)


def main():
    dashboard_path, server, start, end, instant, step, rate_interval, subtitle, output = sys.argv[1:10]
    dashboard = json.load(open(dashboard_path))
    panels = dashboard["panels"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    unit_w, unit_h = 0.66, 0.36
    top_margin = 0.9
    fig = plt.figure(figsize=(24 * unit_w, rows * unit_h + top_margin), facecolor=BACKGROUND)
    height = rows * unit_h + top_margin
    fig.text(0.01, 1 - 0.35 / height, dashboard["title"], color=TEXT, fontsize=14, fontweight="bold")
    fig.text(0.01, 1 - 0.7 / height, subtitle, color=MUTED, fontsize=9)
    pad = 0.08
    for panel in panels:
        g = panel["gridPos"]
        # Time series keep room on their left for the value axis.
        inset = 0.45 if panel["type"] == "timeseries" else 0.0
        left = (g["x"] * unit_w + pad + inset) / (24 * unit_w)
        width = (g["w"] * unit_w - 2 * pad - inset) / (24 * unit_w)
        bottom = 1 - (top_margin + (g["y"] + g["h"]) * unit_h - pad) / height
        panel_height = (g["h"] * unit_h - 2 * pad - 0.28) / height
        ax = fig.add_axes([left, bottom, width, panel_height])
        kind = panel["type"]
        if kind == "stat":
            draw_stat(ax, panel, server, instant, rate_interval)
        elif kind == "timeseries":
            draw_timeseries(ax, panel, server, start, end, step, rate_interval)
        elif kind == "table":
            draw_table(ax, panel, server, instant, rate_interval)
    fig.savefig(output, dpi=80, facecolor=BACKGROUND)


if __name__ == "__main__":
    main()
