"""Reports of a run: JUnit XML for CI systems, and an HTML page with figures.

:func:`junit` gives one ``testsuite`` per configuration and one ``testcase`` per
program (``seed N (kind)``): a ``failure`` for a mismatch (its signature as the
message, the mismatch and the repro command as text), an ``error`` for a crash
or an error of vta; the run's provenance goes into ``properties``.

:func:`html` is a self-contained page (figures as embedded PNG, made with
matplotlib, the ``regress`` extra): what ran and what made it, throughput over
the run, functional coverage per bin and per configuration, the cross
coverage, failures per signature (with their repro commands and shrunk files),
RTL coverage per module with uncovered lines, and the trend across earlier
runs' results files.
"""

from __future__ import annotations

import base64
import html as _html
import io
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

JUNIT = "junit.xml"
HTML = "report.html"


# ------------------------------------------------------------------ JUnit
def junit(summary, records: Sequence[dict[str, Any]]) -> str:
    """The run as JUnit XML (see the module docstring)."""
    plan = summary.plan
    root = ET.Element("testsuites", name=f"vta regress {plan.backend}")
    by_config: dict[str, list[dict[str, Any]]] = {c: [] for c in plan.config_names}
    for r in records:
        by_config.setdefault(r["config"], []).append(r)
    for config, recs in by_config.items():
        fails = sum(r["status"] == "fail" for r in recs)
        errors = sum(r["status"] in ("crash", "error") for r in recs)
        suite = ET.SubElement(root, "testsuite", name=f"vta.regress.{config}",
                              tests=str(len(recs)), failures=str(fails), errors=str(errors),
                              skipped="0",
                              time=f"{sum(r.get('seconds', 0.0) for r in recs):.3f}")
        props = ET.SubElement(suite, "properties")
        for key, value in {"backend": plan.backend, "generator": plan.generator,
                           "timing": plan.timing,
                           **{f"provenance.{k}": v for k, v in plan.provenance.items()}}.items():
            ET.SubElement(props, "property", name=key, value=str(value))
        for r in sorted(recs, key=lambda r: r["seed"]):
            case = ET.SubElement(suite, "testcase", classname=f"vta.regress.{config}",
                                 name=f"seed {r['seed']} ({r.get('kind')})",
                                 time=f"{r.get('seconds', 0.0):.4f}")
            repro = (r.get("repro") or {}).get("regress", "")
            if r["status"] == "fail":
                m = r.get("mismatch", {})
                el = ET.SubElement(case, "failure", message=r.get("signature") or m.get("kind", ""),
                                   type=m.get("kind", "mismatch"))
                el.text = f"{m.get('message', '')}\nrepro: {repro}"
            elif r["status"] != "pass":
                el = ET.SubElement(case, "error", message=(r.get("message") or "")[:200],
                                   type=r["status"])
                el.text = f"{r.get('message', '')}\nrepro: {repro}"
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# ------------------------------------------------------------------ HTML
def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return f'<img src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    esc = _html.escape
    head = "".join(f"<th>{esc(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _throughput(records: Sequence[dict[str, Any]]) -> str | None:
    import matplotlib.pyplot as plt

    times = sorted(r["at"] for r in records if "at" in r)
    if len(times) < 2:
        return None
    t0 = times[0]
    xs = [(t - t0) / 60 for t in times]
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(xs, range(1, len(xs) + 1), color="tab:blue")
    ax.set_xlabel("minutes since the first result")
    ax.set_ylabel("results", color="tab:blue")
    window = max(60.0, (times[-1] - t0) / 60)  # seconds per rate point
    edges, rates, k = [], [], 0
    start = t0
    while start < times[-1]:
        n = 0
        while k < len(times) and times[k] < start + window:
            n += 1
            k += 1
        span = min(window, times[-1] - start) or window  # the last window may be short
        edges.append((start + span / 2 - t0) / 60)
        rates.append(n / span)
        start += window
    ax2 = ax.twinx()
    ax2.plot(edges, rates, color="tab:orange", marker=".")
    ax2.set_ylabel("programs/s", color="tab:orange")
    ax.set_title("throughput over the run")
    return _png(fig)


def _coverage_figure(summary) -> str | None:
    import matplotlib.pyplot as plt
    import numpy as np

    covs = summary.config_coverage
    if not covs:
        return None
    bins = list(summary.coverage.bins)
    configs = list(covs)
    data = np.array([[covs[c].counts[b] for c in configs] for b in bins], dtype=float)
    fig, ax = plt.subplots(figsize=(2 + 1.1 * len(configs), 0.16 * len(bins) + 1))
    im = ax.imshow(np.log10(data + 1), aspect="auto", cmap="viridis")
    ax.set_yticks(range(len(bins)), bins, fontsize=6)
    ax.set_xticks(range(len(configs)), configs, rotation=30)
    for i, j in zip(*np.nonzero(data == 0), strict=True):
        ax.text(j, i, "hole", ha="center", va="center", color="red", fontsize=6)
    fig.colorbar(im, ax=ax, label="log10(programs + 1)")
    ax.set_title("functional coverage: programs per bin and configuration")
    return _png(fig)


def _cross_figure(summary) -> str | None:
    import matplotlib.pyplot as plt
    import numpy as np

    cross = summary.cross
    if cross is None:
        return None
    name = "opcode x config x latency x stall"
    keys = cross.universe[name]
    cols = sorted({" | ".join(k.split(" | ")[1:]) for k in keys},
                  key=lambda c: [cross.configs.index(c.split(" | ")[0]), c])
    rows = list(dict.fromkeys(k.split(" | ")[0] for k in keys))
    data = np.array([[cross.counts[f"{r} | {c}"] for c in cols] for r in rows], dtype=float)
    fig, ax = plt.subplots(figsize=(min(20, 1 + 0.32 * len(cols)), 0.3 * len(rows) + 1.5))
    im = ax.imshow(np.log10(data + 1), aspect="auto", cmap="viridis")
    fig.colorbar(im, ax=ax, label="log10(programs + 1)")
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=6)
    for i, j in zip(*np.nonzero(data == 0), strict=True):
        ax.text(j, i, "x", ha="center", va="center", color="red", fontsize=7)
    ax.set_title(f"cross coverage: {name} (x: hole)")
    return _png(fig)


def _failures_figure(groups) -> str | None:
    import matplotlib.pyplot as plt

    if not groups:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(groups) + 1))
    names = [g.signature for g in groups][::-1]
    ax.barh(names, [g.count for g in groups][::-1],
            color=["tab:gray" if g.known else "tab:red" for g in groups][::-1])
    ax.set_xlabel("failing programs")
    ax.set_title("failures per signature (grey: known)")
    return _png(fig)


def _rtl_figure(rtl) -> str | None:
    import matplotlib.pyplot as plt

    mods = rtl.per_module() if rtl is not None else {}
    if not mods:
        return None
    names = list(mods)
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(names) + 1))
    ys = range(len(names))
    pct = [100 * m["line"][0] / max(1, m["line"][1]) for m in mods.values()]
    tog = [100 * m["toggle"][0] / max(1, m["toggle"][1]) for m in mods.values()]
    ax.barh([y + 0.2 for y in ys], pct, height=0.4, label="line")
    ax.barh([y - 0.2 for y in ys], tog, height=0.4, label="toggle")
    ax.set_yticks(list(ys), names)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of points hit")
    ax.legend(loc="lower left")
    ax.set_title("RTL coverage per module (Verilator)")
    return _png(fig)


def trend_row(summary, label: str) -> dict[str, Any]:
    """One run's point of the trend: programs, failures, coverage."""
    cov = summary.coverage
    row = {"run": label, "programs": summary.total,
           "failing": summary.total - summary.counts["pass"],
           "signatures": len(summary.groups),
           "bins": f"{len(cov.bins) - len(cov.holes)}/{len(cov.bins)}" if cov else "-",
           "commit": (summary.plan.provenance.get("commit") or "")[:10]}
    if summary.rtl is not None and summary.rtl.counts:
        t = summary.rtl.totals()
        row["rtl line %"] = round(100 * t["line"][0] / max(1, t["line"][1]), 1)
        row["rtl toggle %"] = round(100 * t["toggle"][0] / max(1, t["toggle"][1]), 1)
    return row


def _trend_figure(rows: list[dict[str, Any]]) -> str | None:
    import matplotlib.pyplot as plt

    if len(rows) < 2:
        return None
    fig, ax = plt.subplots(figsize=(9, 3))
    xs = range(len(rows))
    ax.plot(xs, [r["failing"] for r in rows], marker="o", color="tab:red", label="failing")
    ax.set_ylabel("failing programs")
    ax2 = ax.twinx()
    for key, color in (("rtl line %", "tab:blue"), ("rtl toggle %", "tab:green")):
        if any(key in r for r in rows):
            ax2.plot(xs, [r.get(key, float("nan")) for r in rows], marker=".", color=color,
                     label=key)
    ax2.set_ylabel("RTL coverage %")
    ax.set_xticks(list(xs), [r["run"] for r in rows], rotation=20, fontsize=7)
    ax.set_title("trend across runs")
    fig.legend(loc="upper left")
    return _png(fig)


def html(summary, records: Sequence[dict[str, Any]],
         history: Sequence[tuple[str, Any]] = ()) -> str:
    """The HTML report of ``summary`` (``records``: its result records; ``history``:
    ``(label, summary)`` of earlier runs, oldest first)."""
    plan = summary.plan
    esc = _html.escape
    parts = [f"<h1>vta regress: {esc(plan.backend)}, {len(plan.configs)} configuration(s), "
             f"seeds {plan.seed}..{plan.seed + plan.programs - 1}</h1>",
             f"<p>written {time.strftime('%Y-%m-%d %H:%M:%S')}; generator version "
             f"{plan.generator}; timing {esc(plan.timing)}"
             f"{'; coverage-directed' if plan.directed else ''}</p>"]
    parts.append("<h2>What ran</h2>" + _table(
        ["configuration", "pass", "fail", "crash", "error"],
        [[c, *(summary.per_config.get(c, {}).get(k, 0) for k in ("pass", "fail", "crash",
                                                                 "error"))]
         for c in plan.config_names]))
    parts.append(_table(["provenance", "value"], list(plan.provenance.items())))
    parts.append(f"<p>{summary.ran} programs run now in {summary.seconds:.0f} s on "
                 f"{summary.workers} worker(s), {summary.setup_seconds:.0f} s of it opening "
                 f"simulators: {summary.steady_rate:.2f} programs/s without that, "
                 f"{summary.rate:.2f} with it.</p>")
    figure = _throughput(records)
    if figure:
        parts.append("<h2>Throughput</h2>" + figure)
    groups = summary.groups
    parts.append("<h2>Failures per signature</h2>")
    if groups:
        shrunk = {e.get("signature"): e for e in summary.shrunk}
        parts.append(_failures_figure(groups) or "")
        parts.append(_table(
            ["signature", "programs", "status", "example", "repro", "shrunk", "replay"],
            [[g.signature, g.count, f"known: {g.known}" if g.known else
              ("new" if g.new else "seen before" if g.new is False else ""),
              f"{g.smallest()['config']} seed {g.smallest()['seed']}",
              (g.smallest().get("repro") or {}).get("regress", ""),
              _shrunk_text(shrunk.get(g.signature)), (shrunk.get(g.signature) or {}).get(
                  "diff", "")] for g in groups]))
    else:
        parts.append("<p>none</p>")
    cov = summary.coverage
    if cov is not None:
        parts.append(f"<h2>Functional coverage</h2><p>{len(cov.bins) - len(cov.holes)}/"
                     f"{len(cov.bins)} bins hit"
                     + (f", every bin after {cov.closed_at} programs" if cov.closed_at else "")
                     + f"; holes: {esc(', '.join(cov.holes) or 'none')}</p>")
        parts.append(_table(["configuration", "bins hit", "all hit after", "holes"],
                            [[c, f"{len(v.bins) - len(v.holes)}/{len(v.bins)}",
                              v.closed_at or "-", ", ".join(v.holes)]
                             for c, v in summary.config_coverage.items()]))
        parts.append(_coverage_figure(summary) or "")
    if summary.cross is not None:
        parts.append("<h2>Cross coverage</h2>" + _table(
            ["cross", "bins hit", "holes"],
            [[name, f"{d['covered']}/{d['total']}", ", ".join(d["holes"][:40])]
             for name, d in summary.cross.as_dict().items()]))
        parts.append(_cross_figure(summary) or "")
    if summary.rtl is not None and summary.rtl.counts:
        mods = summary.rtl.per_module()
        parts.append("<h2>RTL coverage (Verilator line and toggle)</h2>")
        parts.append(_rtl_figure(summary.rtl) or "")
        parts.append(_table(["module", "line points", "toggle points", "uncovered lines"],
                            [[n, f"{m['line'][0]}/{m['line'][1]}",
                              f"{m['toggle'][0]}/{m['toggle'][1]}",
                              ", ".join(m["uncovered_lines"])] for n, m in mods.items()]))
    rows = [trend_row(s, label) for label, s in history] + [trend_row(summary, "this run")]
    if len(rows) > 1:
        parts.append("<h2>Trend across runs</h2>" + (_trend_figure(rows) or "")
                     + _table(list(rows[-1]), [[r.get(k, "") for k in rows[-1]]
                                               for r in rows]))
    style = ("body{font-family:sans-serif;margin:2em;max-width:1200px}"
             "table{border-collapse:collapse;margin:1em 0;font-size:90%}"
             "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}"
             "img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>vta regress</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")


def _shrunk_text(entry: dict[str, Any] | None) -> str:
    if not entry:
        return ""
    if entry.get("stats"):
        st = entry["stats"]
        return f"{entry['shrunk']} ({st['insns'][0]} -> {st['insns'][1]} instructions)"
    return entry.get("status", "")


def write_reports(summary, records: Sequence[dict[str, Any]], out: Path,
                  history: Sequence[tuple[str, Any]] = ()) -> list[Path]:
    """Write ``junit.xml`` and ``report.html`` into ``out``; returns their paths."""
    paths = [out / JUNIT, out / HTML]
    paths[0].write_text(junit(summary, records))
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        return paths[:1]  # no matplotlib: JUnit only
    paths[1].write_text(html(summary, records, history))
    return paths
