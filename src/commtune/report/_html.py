"""The study report: one self-contained HTML page (``commtune report``).

Sections (each an element with an ``id`` a reader or a test can find): ``study`` (command,
platform, MPI, knobs and their domains), ``convergence`` (every run, the best so far, failed
trials; the defaults' drift), ``importance`` (PED-ANOVA and a slice plot per important knob),
``best`` (the top configurations), ``verdict`` (the confirmation's strip plot, the verdict and
its reason, knobs that did not take), ``platform-sample``, ``prediction`` and ``policy`` where
the study has them, ``export`` (the lines to copy) and ``trials``. The figures are PNG data in
the page: it needs no network and no other file. ``--compare`` puts several studies side by
side (a summary table, their convergence on one axis), then each study's own sections.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from commtune.mpi import nodes_words
from commtune.report import _plots as plots
from commtune.report._study_data import StudyData
from commtune.study import InRunFinding

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
td, th { border: 1px solid #ddd; padding: .2em .5em; text-align: left; vertical-align: top; }
th { background: #f4f6f7; } code, pre { background: #f4f6f7; font-size: .9em; }
pre { padding: .6em; overflow-x: auto; } img { max-width: 100%; }
.note { color: #666; font-style: italic; } .ok { color: #1e8449; } .no { color: #a93226; }
.slices { display: flex; flex-wrap: wrap; gap: 1em; } .slices img { width: 30em; }
section.study { margin-bottom: 3em; }
"""

# Reports, in the page itself, an image that did not load (a console error, and counts on
# <body> that a headless browser's DOM dump shows).
_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-images', String(imgs.length));
  document.body.setAttribute('data-images-ok', String(ok));
  if (ok < imgs.length) {
    console.error('commtune report: ' + (imgs.length - ok) + ' image(s) did not load');
  }
});
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _img(uri: str, alt: str) -> str:
    return f'<img src="{uri}" alt="{_e(alt)}">'


def _config(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items()) or "(library defaults)"


def _speedup(value: float | None) -> str:
    return f"{1 / value:.2f}x" if value else "-"


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


def page(studies: Sequence[StudyData], title: str) -> str:
    parts = []
    if len(studies) > 1:  # one study: its own heading is the page's
        parts += [f"<h1>{_e(title)}</h1>", _compare(studies)]
    parts += [_study(s, prefix=f"{s.name}-" if len(studies) > 1 else "") for s in studies]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style><script>{_SCRIPT}</script></head>"
        f"<body>{''.join(parts)}</body></html>\n"
    )


def _compare(studies: Sequence[StudyData]) -> str:
    rows = []
    for s in studies:
        acc = s.acceptance
        verdict = (
            "no confirmation" if acc is None else ("accepted" if acc.accepted else "default stays")
        )
        speedup = f"{acc.speedup:.2f}x" if acc and acc.speedup else "-"
        platform = s.platform or {}
        rows.append([s.name, s.spec.library, platform.get("cpu_model", "?"),
                     len(s.searched), verdict, speedup,
                     _config(dict(acc.params)) if acc else "-"])  # fmt: skip
    table = _table(["study", "MPI", "CPU", "search trials", "verdict", "speedup",
                    "configuration"], rows)  # fmt: skip
    curves = _img(plots.compared_convergence(studies), "convergence of the studies compared")
    return f'<section id="compare"><h2>Side by side</h2>{table}{curves}</section>'


def _study(s: StudyData, prefix: str = "") -> str:
    sections = [
        _summary(s, prefix),
        _convergence(s, prefix),
        _importance(s, prefix),
        _best(s, prefix),
        _verdict(s, prefix),
        _twin(s, prefix),
        _inrun(s, prefix),
        _sample(s, prefix),
        _prediction(s, prefix),
        _policy(s, prefix),
        _export(s, prefix),
        _trials(s, prefix),
    ]
    return f'<section class="study"><h1>Study {_e(s.name)}</h1>{"".join(sections)}</section>'


def _section(prefix: str, ident: str, title: str, body: str) -> str:
    return f'<section id="{_e(prefix + ident)}"><h2>{_e(title)}</h2>{body}</section>'


def _summary(s: StudyData, prefix: str) -> str:
    platform = s.platform or {}
    facts = [
        ("command", " ".join(s.spec.command)),
        ("MPI library", f"{s.spec.library} {platform.get('mpi_version', '')} "
                        f"({platform.get('mpi_device', '')})"),
        ("platform", f"{platform.get('cpu_model', '?')}, {platform.get('cores', '?')} cores"
                     + nodes_words(platform.get("nodes"))),
        ("metric", f"{s.spec.metric} ({s.spec.statistic} of up to {s.spec.repeats} runs)"),
        ("runs", f"{s.runs} in all; noise {100 * s.noise_cv:.1f} % (CV of a configuration's "
                 f"runs), drift {s.drift:.2f}x"),
    ]  # fmt: skip
    knobs = _table(["knob", "values searched"],
                   [(k, ", ".join(map(str, v))) for k, v in s.knobs])  # fmt: skip
    return _section(prefix, "study", "The study", _table(["", ""], facts) + knobs)


def _convergence(s: StudyData, prefix: str) -> str:
    if not s.searched:
        return _section(prefix, "convergence", "Convergence",
                        _note("no search trial ran: nothing converged"))  # fmt: skip
    failed = sum(t.failed for t in s.searched)
    body = _img(plots.convergence(s), "search convergence")
    if failed:
        body += _note(f"{failed} of {len(s.searched)} search trials failed (marked x)")
    if s.default_runs:
        body += _img(plots.drift(s), "the defaults over time")
        body += _img(plots.timeline(s), "every run in order: reference, search, verdict")
    return _section(prefix, "convergence", "Convergence", body)


def _importance(s: StudyData, prefix: str) -> str:
    if not s.importances:
        return _section(prefix, "importance", "Knob importance", _note(s.importance_note))
    body = _img(plots.importance(s.importances, s.importance_note), "knob importance")
    body += _note(f"{s.importance_note}; lower relative time is faster")
    slices = "".join(_img(plots.slice_plot(k, pts), f"slice of {k}") for k, pts in s.slices.items())
    if slices:
        body += f'<div class="slices">{slices}</div>'
    return _section(prefix, "importance", "Knob importance", body)


def _best(s: StudyData, prefix: str) -> str:
    if not s.top:
        return _section(prefix, "best", "Best configurations",
                        _note("no search trial finished"))  # fmt: skip
    rows = [(t.number, _config(t.config), f"{t.value:.3f}" if t.value else "-",
             _speedup(t.value), t.runs) for t in s.top]  # fmt: skip
    table = _table(["trial", "configuration", "relative time", "speedup (search)", "runs"], rows)
    return _section(prefix, "best", "Best configurations", table)


def _verdict(s: StudyData, prefix: str) -> str:
    acc = s.acceptance
    if acc is None:
        body = _note("this study has no confirmation (it was stopped before, or ran with "
                     "--confirm 0): no configuration is claimed faster")  # fmt: skip
    else:
        from rich.text import Text

        from commtune.report._tables import verdict_lines

        cls, word = ("ok", "accepted") if acc.accepted else ("no", "not accepted")
        said = [Text.from_markup(line).plain for line in verdict_lines(acc)]
        config = _e(_config(dict(acc.params)))
        if acc.notes.reference:
            said.append(f"every speedup here is against {acc.notes.reference}")
        body = (f'<p><b class="{cls}">{word}</b></p>'
                + "".join(f"<p>{_e(line)}</p>" for line in said)
                + f"<p>configuration: <code>{config}</code></p>")  # fmt: skip
        candidates = {f"trial {c.get('trial')}": c.get("values") or []
                      for c in acc.candidates}  # fmt: skip
        if not candidates and acc.best_values:
            candidates = {"best": acc.best_values}
        if acc.default_values and candidates:
            body += _img(plots.confirmation(acc.default_values, candidates), "confirmation runs")
        rows = [(c.get("trial"), f"{c['speedup']:.2f}x" if c.get("speedup") else "-",
                 f"[{c['ci'][0]:.2f}, {c['ci'][1]:.2f}]" if c.get("ci") else "-",
                 len(c.get("values") or []), c.get("failure") or "")
                for c in acc.candidates]  # fmt: skip
        if rows:
            body += _table(["trial", "speedup", "CI", "runs", "failure"], rows)
    if s.not_applied:
        body += "<p>Knobs that did not take:</p>" + _table(
            ["knob", "why"], sorted(s.not_applied.items())
        )
    return _section(prefix, "verdict", "Verdict", body)


def _twin(s: StudyData, prefix: str) -> str:
    """A study with a simulated twin: what the terminal said of it (``TwinReport.lines``: the
    simulation's ranking beside the real runs', where each knob came from, the program's
    simulated time at larger scales), with the scaling drawn."""
    from commtune.study import TwinReport

    said = s.acceptance.notes.twin_report if s.acceptance else None
    if not said:
        return ""
    report = TwinReport.from_json(said)
    body = "<pre>" + "\n".join(_e(line) for line in report.lines()) + "</pre>"
    grown = [r.to_json() for r in report.scaling]
    if grown:
        body += "<h3>The program as it grows (simulated)</h3>"
    if sum(1 for r in grown if r["defaults"]) > 1:
        body += _img(plots.scaling(grown), "simulated time against ranks")
    return _section(prefix, "twin", "The simulated twin", body)


def _inrun(s: StudyData, prefix: str) -> str:
    """A study raced in-run (``service._inrun``): its candidates per call, pooled over its
    raced runs, the program's share in the raced collective, and the first run's call times
    by block drawn with every candidate's estimate."""
    found = s.acceptance.finding if s.acceptance else None
    if not isinstance(found, InRunFinding):
        return ""
    import numpy as np

    from commtune.report._race import race_figure

    raced = found.raced
    rows = [(c["name"], c["blocks"], f"{1e6 * c['median_s']:.2f}",
             f"{1e6 * c['reference_median_s']:.2f}", f"{c['speedup']:.3f}x",
             f"{c['interval'][0]:.3f}-{c['interval'][1]:.3f}") for c in raced]  # fmt: skip
    body = _table(["algorithm", "blocks", "us a call", "reference us", "speedup a call",
                   "interval"], rows)  # fmt: skip
    if found.share is not None:
        body += f"<p>{_e(found.share_said)}</p>"
    if len(found.by_size) > 1:  # the race per message size: evidence, not the verdict
        body += ("<p>Per message size, each candidate tested on that size's blocks alone "
                 "(evidence from the race; where the choices differ, their selection file "
                 "is what the whole runs tested):</p>")  # fmt: skip
    if found.selection:
        body += (f"<p>Answer by message size, as the library's selection file "
                 f"(<code>{_e(found.selection['name'])}</code>; <code>commtune export "
                 f"--format selection</code> writes it):</p><pre>"
                 f"{_e(found.selection['text'][:4000])}</pre>")  # fmt: skip
        body += _table(["size", "ranks", "share", "chosen", "calls' speedup", "best"], [
            (r["bytes"], r["ranks"], f"{r['share']:.0%}",
             r["chosen"] or f"{found.reference_name} (none passed)",
             f"{r['speedup']:.3f}x" if r.get("speedup") else "",
             f"{r['best']} {r['best_speedup']:.3f}x") for r in found.by_size])  # fmt: skip
    costs = [c for c in found.overhead if c]
    if costs:  # measured in each raced run: its barriers' share of its time
        body += (f"<p>Racing's own cost, its barriers' share of each raced run's time: "
                 f"{', '.join(f'{100 * lo:.2f}-{100 * hi:.2f} %' for lo, hi in costs)} (the "
                 "rank that waited least: the barrier's price; the most: with late ranks' "
                 "wait, which the calls would mostly have paid).</p>")  # fmt: skip
    first = found.blocks
    if first.get("times"):
        passed = set(found.passed)
        estimates = [(c["name"], c["speedup"], tuple(c["interval"]), c["name"] in passed)
                     for c in raced]  # fmt: skip
        figure = race_figure(found.op, first["calls"], first["names"],
                             np.array(first["times"], dtype=float), estimates)  # fmt: skip
        body += _img(plots.png(figure), "the first raced run's call times by block")
    return _section(prefix, "inrun", "Raced in-run", body)


def _sample(s: StudyData, prefix: str) -> str:
    if s.sample is None:
        return ""
    from commtune.report._sample_plots import family_figure

    images = "".join(
        _img(plots.png(family_figure(fam, s.sample)), f"{fam.op} {fam.name}")
        for fam in s.sample.families
        if fam.curves
    )
    return _section(prefix, "platform-sample", "The platform's sampled curves", images)


def _prediction(s: StudyData, prefix: str) -> str:
    acc = s.acceptance
    features = acc.notes.features if acc else None
    if not features:
        return ""
    rows = [(k, f"{v:.4g}" if isinstance(v, float) else v) for k, v in features.items()]
    body = _table(["feature", "value"], rows)
    assert acc is not None
    body += f"<p>predicted: <code>{_e(_config(dict(acc.params)))}</code></p>"
    return _section(prefix, "prediction", "Prediction model", body)


def _policy(s: StudyData, prefix: str) -> str:
    if not s.policy_actions:
        return ""
    rows = [(a["trial"], a["run"], f"{float(a.get('time', 0)):.3f} s", a.get("rule"),
             f"{a.get('cvar')}={a.get('value')}", a.get("trigger"), a.get("status"))
            for a in s.policy_actions[:200]]  # fmt: skip
    table = _table(["trial", "run", "time", "rule", "set", "because", "status"], rows)
    return _section(prefix, "policy", "Policy actions during the runs", table)


def _export(s: StudyData, prefix: str) -> str:
    if not s.exports:
        nothing = _note("no accepted configuration: the defaults stay, nothing to set")
        return _section(prefix, "export", "Export", nothing)
    body = "".join(f"<h3>{_e(fmt)}</h3><pre>{_e(text)}</pre>" for fmt, text in s.exports.items())
    return _section(prefix, "export", "Export", body)


def _trials(s: StudyData, prefix: str) -> str:
    rows = [(t.number, t.role, t.state, f"{t.value:.3f}" if t.value is not None else "-",
             _config(t.config) if t.role != "control" else "", t.runs, t.reason,
             ", ".join(t.jobs)) for t in s.trials]  # fmt: skip
    table = _table(["trial", "role", "state", "value", "configuration", "runs", "note",
                    "Slurm jobs"], rows)  # fmt: skip
    return _section(prefix, "trials", f"All {len(s.trials)} trials", table)
