"""`codeloop eval report`: a self-contained HTML page and a Markdown summary of one run."""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from statistics import median
from typing import Any

from codeloop.errors import CodeloopError
from codeloop.eval.records import Record


@dataclass(frozen=True)
class Group:
    name: str
    instances: int
    judged: int
    resolved: int

    @property
    def resolved_pct(self) -> float:
        return round(100 * self.resolved / self.judged, 1) if self.judged else 0.0


def _groups(records: Iterable[Record], key: Callable[[Record], str]) -> list[Group]:
    by: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by[key(r)].append(r)
    return [Group(name, len(rs), sum(r.judged for r in rs), sum(r.resolved for r in rs))
            for name, rs in sorted(by.items())]


def _med(values: list[float]) -> float:
    return round(median(values), 3) if values else 0.0


def summary(records: list[Record]) -> dict[str, Any]:
    """The run's headline figures; the report's tables and the tests read the same dict."""
    judged = [r for r in records if r.judged]
    resolved = sum(r.resolved for r in judged)
    return {
        "instances": len(records),
        "judged": len(judged),
        "resolved": resolved,
        "resolved_pct": round(100 * resolved / len(judged), 1) if judged else 0.0,
        "not_judged": len(records) - len(judged),
        "cost_usd_total": round(sum(r.cost_usd for r in judged), 6),
        "cost_usd_median": _med([r.cost_usd for r in judged]),
        "steps_median": _med([float(r.steps) for r in judged]),
        "agent_s_median": _med([r.agent_s for r in judged]),
        "verify_s_median": _med([r.verify_s for r in judged]),
        "judge_s_median": _med([r.judge_s for r in judged]),
        "wall_s_total": round(sum(r.wall_s for r in records), 2),
        "by_repo": {g.name: {"judged": g.judged, "resolved": g.resolved}
                    for g in _groups(records, lambda r: r.repo)},
        "by_language": {g.name: {"judged": g.judged, "resolved": g.resolved}
                        for g in _groups(records, lambda r: r.language)},
    }


def _png(draw: Callable[[Any], None]) -> str:
    """One matplotlib figure as an inline <img> (Agg: no display is needed)."""
    try:
        import matplotlib
    except ImportError as exc:
        raise CodeloopError("the report's plots need matplotlib, which is not installed",
                            "pip install 'codeloop[eval]'") from exc
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4), dpi=96)
    try:
        draw(ax)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="" src="data:image/png;base64,{data}">'


def _plots(records: list[Record]) -> list[tuple[str, str]]:
    judged = [r for r in records if r.judged]
    repos = _groups(records, lambda r: r.repo)
    colours = ["#2a9d8f" if r.resolved else "#e76f51" for r in judged]

    def by_repo(ax: Any) -> None:
        ax.barh([g.name for g in repos], [g.resolved_pct for g in repos], color="#2a9d8f")
        ax.set_xlabel("resolved % of judged")
        ax.set_xlim(0, 100)

    def cost_steps(ax: Any) -> None:
        ax.scatter([r.steps for r in judged], [r.cost_usd for r in judged], c=colours, s=14)
        ax.set_xlabel("steps")
        ax.set_ylabel("cost (USD)")

    def steps_hist(ax: Any) -> None:
        ax.hist([r.steps for r in judged], bins=20, color="#264653")
        ax.set_xlabel("steps per instance")

    def cost_hist(ax: Any) -> None:
        ax.hist([r.cost_usd for r in judged], bins=20, color="#e9c46a")
        ax.set_xlabel("cost per instance (USD)")

    def time_parts(ax: Any) -> None:
        parts = {"agent (less verify)": sum(max(r.agent_s - r.verify_s, 0) for r in judged),
                 "verify": sum(r.verify_s for r in judged),
                 "judge": sum(r.judge_s for r in judged)}
        ax.bar(list(parts), [v / 3600 for v in parts.values()], color="#8ab17d")
        ax.set_ylabel("hours, whole run")

    return [("Resolved by repository", _png(by_repo)), ("Cost against steps", _png(cost_steps)),
            ("Steps", _png(steps_hist)), ("Cost", _png(cost_hist)),
            ("Where the time went", _png(time_parts))]


def _table(header: list[str], rows: Iterable[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _e(value: Any) -> str:
    return html.escape(str(value))


def html_report(records: list[Record], title: str, links: dict[str, str] | None = None) -> str:
    """The whole page; images are inlined, so the file can be mailed or archived alone.
    `links` maps a record's trajectory file to its viewer page; unmapped ones link the file."""
    s = summary(records)
    headline = _table(["instances", "judged", "resolved", "resolved %", "cost total (USD)",
                       "median steps", "median agent s", "median judge s"],
                      [[s["instances"], s["judged"], s["resolved"], s["resolved_pct"],
                        s["cost_usd_total"], s["steps_median"], s["agent_s_median"],
                        s["judge_s_median"]]])
    groups = _table(["repository", "instances", "judged", "resolved", "resolved %"],
                    [[_e(g.name), g.instances, g.judged, g.resolved, g.resolved_pct]
                     for g in _groups(records, lambda r: r.repo)])
    languages = _table(["language", "instances", "judged", "resolved", "resolved %"],
                       [[_e(g.name), g.instances, g.judged, g.resolved, g.resolved_pct]
                        for g in _groups(records, lambda r: r.language)])
    rows = []
    for r in sorted(records, key=lambda r: r.instance_id):
        name = _e(r.instance_id)
        href = (links or {}).get(r.trajectory) or r.trajectory
        if href:
            name = f'<a href="{_e(href)}">{name}</a>'
        rows.append([name, f'<span class="{_e(r.outcome)}">{_e(r.outcome)}</span>', r.steps,
                     f"{r.cost_usd:.4f}", f"{r.agent_s:.1f}", f"{r.judge_s:.1f}",
                     _e(r.reason[:200])])
    instances = _table(["instance", "outcome", "steps", "cost", "agent s", "judge s", "reason"],
                       rows)
    plots = "".join(f"<figure><figcaption>{_e(t)}</figcaption>{img}</figure>"
                    for t, img in _plots(records))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
figure {{ display: inline-block; margin: 0.5em; }}
.resolved {{ color: #1b7f3a; }} .not_resolved {{ color: #b3261e; }}
.env_unavailable {{ color: #8a6d00; }}
</style></head><body>
<h1>{_e(title)}</h1>
<section id="summary"><h2>Summary</h2>{headline}</section>
<section id="by-repo"><h2>By repository</h2>{groups}</section>
<section id="by-language"><h2>By language</h2>{languages}</section>
<section id="plots"><h2>Plots</h2>{plots}</section>
<section id="instances"><h2>Instances</h2>{instances}</section>
</body></html>
"""


def markdown_report(records: list[Record], title: str) -> str:
    s = summary(records)
    lines = [f"# {title}", "",
             f"Resolved **{s['resolved']}/{s['judged']}** judged ({s['resolved_pct']}%); "
             f"{s['not_judged']} not judged; cost ${s['cost_usd_total']:.4f}; "
             f"median steps {s['steps_median']}.", "",
             "| repository | judged | resolved | % |", "|---|---|---|---|"]
    for g in _groups(records, lambda r: r.repo):
        lines.append(f"| {g.name} | {g.judged} | {g.resolved} | {g.resolved_pct} |")
    return "\n".join(lines) + "\n"
