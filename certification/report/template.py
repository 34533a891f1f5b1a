# ruff: noqa: E501, RUF001 - HTML markup, not Python: line length and the multiplication sign are the page's
"""The report page as one Jinja2 template (kept in Python so it ships with the package).

Autoescaping is on for every value; the only strings placed in ``class`` attributes come from
fixed tables in this package, never from an artifact. The CSP meta tag forbids every fetch:
no script, no font, no external image, no connection; styles are inline, images only ``data:``.
"""

from __future__ import annotations

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #212121; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; } code { font-family: ui-monospace, monospace; font-size: 12px; }
.meta { color: #555; } .banner { padding: 8px 12px; border-radius: 4px; font-weight: 600; display: inline-block; }
.ok-banner { background: #e8f5e9; color: #1b5e20; } .bad-banner { background: #ffebee; color: #b71c1c; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
table.grid td.cell { padding: 0; min-width: 120px; }
table.grid td.cell a { display: block; padding: 6px 8px; color: inherit; text-decoration: none; }
table.grid th.row a { color: #0d47a1; }
.counters { font: 11px ui-monospace, monospace; opacity: .85; }
.v-pass { background: #2e7d32; color: #fff; } .v-fail { background: #c62828; color: #fff; }
.v-caught { background: #f9a825; color: #212121; } .v-notcaught { background: #6a1b9a; color: #fff; }
.v-observed { background: #90a4ae; color: #212121; } .v-na { background: #eeeeee; color: #757575; }
.v-unverified { background: #bdbdbd; color: #212121; } .v-other { background: #d7ccc8; color: #212121; }
.v-missing { background: #fafafa; color: #9e9e9e; }
.legend span { display: inline-block; padding: 2px 8px; margin: 0 4px 4px 0; border-radius: 3px; font-size: 12px; }
section.row { border-top: 1px solid #ddd; margin-top: 18px; }
svg { display: block; margin: 6px 0; } svg text { font: 11px system-ui, sans-serif; fill: #424242; }
.lane { stroke: #e0e0e0; } .axis { stroke: #616161; } .grid-line { stroke: #eeeeee; }
.m-ok { fill: #2e7d32; } .m-fail { fill: #c62828; } .m-info { fill: #f9a825; }
.m-effect { fill: #1565c0; } .m-duplicate { fill: #c62828; stroke: #000; stroke-width: 1.5; }
.sig-ok { color: #1b5e20; font-weight: 600; } .sig-bad { color: #b71c1c; font-weight: 600; }
.note { color: #666; font-size: 12px; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>restproof certification report</title>
<style>{{ css }}</style>
</head>
<body>
<h1>restproof certification report</h1>
<p class="meta">run <code>{{ source }}</code> · created {{ created_at or "unknown" }} ·
certified sink <code>{{ certified }}</code> · {{ rows|length }} rows × {{ sinks|length }} sinks</p>
<p><span id="verdict" class="banner {{ 'ok-banner' if trusted and verdict == 'PASS' else 'bad-banner' }}">verdict:
{{ verdict }}{% if not valid %} (invalid run: {{ not_caught|join(', ') }}){% endif %}
{% if not trusted %} · NOT TRUSTED: a signature does not verify{% endif %}</span></p>
<p class="meta" id="endings">how the certified sink's deliveries ended:
{% for name, count in endings %}<b>{{ name }}</b> {{ count }}{% if not loop.last %} · {% endif %}{% endfor %}
{% if unverified %} · <span class="sig-bad">unknown (UNVERIFIED): {{ unverified|join(', ') }}</span>{% endif %}</p>

{% if space %}<h2 id="coverage">Fault-space coverage</h2>
<p class="meta"><b>{{ '%.1f'|format(space.coverage * 100) }} %</b>: {{ space.covered }} of {{ space.meaningful }}
meaningful combinations have a row ({{ space.cells }} enumerated from the code's own lists; the others are
not meaningful, with their reason in <code>scenarios/fault-space.yaml</code>){% if space.journal_meaningful %};
{{ '%.1f'|format(space.journal_coverage * 100) }} % of the {{ space.journal }} journal's {{ space.journal_meaningful }},
the most one run can cover{% endif %}{% if seconds %} · run
{{ seconds.wall }} s wall, {{ seconds.cpu }} s CPU{% endif %}.</p>
{% if space.not_yet %}<table id="not-yet"><thead><tr><th>not yet covered, and why</th><th>cells</th></tr></thead><tbody>
{% for item in space.not_yet %}<tr><td>{{ item.why }}</td><td>{{ item.cells }}</td></tr>{% endfor %}</tbody></table>{% endif %}
{% if space.unexplained_count %}<p class="sig-bad">{{ space.unexplained_count }} combinations neither covered nor
explained.</p>{% endif %}{% endif %}

<h2 id="matrix">Fault matrix</h2>
<p class="legend">{% for name, css in legend %}<span class="{{ css }}">{{ name }}</span>{% endfor %}
<span class="note">counters: d duplicates · f false successes · u unproved resends · l silent losses ·
o out-of-scope effects · w wrong content; [ending] of the certified sink: first_run, recovery, operator, blocked</span></p>
<table class="grid" id="grid">
<thead><tr><th>row</th>{% for sink in sinks %}<th>{{ sink }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in rows %}<tr><th class="row"><a href="#{{ row.anchor }}">{{ row.row_id }}</a></th>
{% for cell in row.cells %}<td class="cell {{ cell.css }}" data-verdict="{{ cell.verdict }}"><a href="#{{ row.anchor }}">
{{ cell.verdict }}{% if cell.ending %} [{{ cell.ending }}]{% endif %}{% if cell.counters %}<br><span class="counters">{{ cell.counters }}</span>{% endif %}</a></td>{% endfor %}
</tr>
{% endfor %}</tbody></table>

<h2 id="gate">Gate</h2>
{% if gate is none %}<p class="note">Not run: no baseline given (<code>--baseline DIR --baseline-key PUB</code>).</p>
{% else %}<p><span class="banner {{ 'ok-banner' if gate.passed else 'bad-banner' }}" id="gate-verdict">gate:
{{ 'PASS' if gate.passed else 'FAIL' }} ({{ gate.rows_compared }} rows compared)</span></p>
{% if gate.problems %}<ul>{% for problem in gate.problems %}<li>{{ problem }}</li>{% endfor %}</ul>{% endif %}{% endif %}

<h2 id="signatures">Signatures</h2>
<p class="note">verified with <code>{{ key }}</code>: this project's own DSSE/ECDSA check and securesystemslib's,
the statement naming the artifact's exact bytes, its content digest holding.</p>
<table id="signature-table"><thead><tr><th>artifact</th><th>envelope</th><th>status</th><th>detail</th></tr></thead><tbody>
{% for sig in signatures %}<tr><td><code>{{ sig.artifact }}</code></td><td><code>{{ sig.envelope }}</code></td>
<td class="{{ 'sig-ok' if sig.verified else 'sig-bad' }}">{{ 'verified' if sig.verified else 'FAILED' }}</td>
<td><code>{{ sig.detail }}</code></td></tr>{% endfor %}
</tbody></table>
{% if problems %}<ul>{% for problem in problems %}<li class="sig-bad">{{ problem }}</li>{% endfor %}</ul>{% endif %}

<h2 id="bench">Benchmarks</h2>
{% if not benches %}<p class="note">No bench artifacts in this run (<code>certify bench …</code> writes
<code>*_benchmark.json</code>).</p>{% endif %}
{% for bench in benches %}<h3>{{ bench.name }}{% if bench.verdict %} — <span class="banner {{ bench.css }}">{{ bench.verdict }}</span>{% endif %}</h3>
{% if bench.note %}<p class="note">{{ bench.note }}</p>{% endif %}
{% if bench.checks %}<table class="checks"><thead><tr><th>check</th><th>result</th><th>detail</th></tr></thead><tbody>
{% for name, check in bench.checks %}<tr><td>{{ name }}</td><td class="{{ 'sig-ok' if check.passed else 'sig-bad' }}">{{ 'passed' if check.passed else 'FAILED' }}</td>
<td>{{ check.detail }}</td></tr>{% endfor %}</tbody></table>{% endif %}
{% for c in bench.charts %}<svg class="chart" width="{{ c.width }}" height="{{ c.height }}"
 viewBox="0 0 {{ c.width }} {{ c.height }}" role="img" aria-label="{{ c.title }}">
<text x="{{ c.left }}" y="14" font-weight="600">{{ c.title }}</text>
{% for y, label in c.y_ticks %}<line class="grid-line" x1="{{ c.left }}" x2="{{ c.left + c.plot_width }}" y1="{{ y }}"
 y2="{{ y }}"/><text x="{{ c.left - 6 }}" y="{{ y + 4 }}" text-anchor="end">{{ label }}</text>{% endfor %}
{% for x, label in c.x_ticks %}<text x="{{ x }}" y="{{ c.top + c.plot_height + 16 }}"
 text-anchor="middle">{{ label }}</text>{% endfor %}
<line class="axis" x1="{{ c.left }}" x2="{{ c.left }}" y1="{{ c.top }}" y2="{{ c.top + c.plot_height }}"/>
<line class="axis" x1="{{ c.left }}" x2="{{ c.left + c.plot_width }}" y1="{{ c.top + c.plot_height }}"
 y2="{{ c.top + c.plot_height }}"/>
<text x="{{ c.left + c.plot_width / 2 }}" y="{{ c.height - 8 }}" text-anchor="middle">{{ c.x_label }}</text>
<text x="14" y="{{ c.top + c.plot_height / 2 }}" text-anchor="middle"
 transform="rotate(-90 14 {{ c.top + c.plot_height / 2 }})">{{ c.y_label }}</text>
{% for line in c.lines %}<polyline fill="none" stroke="{{ line.colour }}" stroke-width="2" points="{{ line.points }}"/>
{% for x, y, label in line.dots %}<circle cx="{{ x }}" cy="{{ y }}" r="3" fill="{{ line.colour }}"><title>{{ label }}</title></circle>{% endfor %}
<rect x="{{ c.left + c.plot_width + 12 }}" y="{{ c.top + loop.index0 * 18 }}" width="12" height="12"
 fill="{{ line.colour }}"/><text x="{{ c.left + c.plot_width + 28 }}" y="{{ c.top + loop.index0 * 18 + 10 }}">{{ line.name }}</text>
{% endfor %}</svg>
{% endfor %}
{% if bench.ratios %}<table><thead><tr><th>ratio</th><th>value</th><th>tolerance</th><th>better</th></tr></thead><tbody>
{% for name, ratio in bench.ratios %}<tr><td>{{ name }}</td><td>{{ '%.4g'|format(ratio.value) }}</td>
<td>{{ '%.0f'|format(ratio.tolerance * 100) }}%</td><td>{{ ratio.better }}</td></tr>{% endfor %}
</tbody></table>{% endif %}
{% endfor %}

{% if airflow %}<h2 id="airflow">Airflow acceptance — Airflow {{ airflow.airflow_version }}:
<span class="banner {{ 'ok-banner' if airflow.verdict == 'PASS' else 'bad-banner' }}">{{ airflow.verdict }}</span></h2>
<table><thead><tr><th>scenario</th><th>result</th><th>submissions</th><th>effects</th><th>worker s after submit</th>
</tr></thead><tbody>{% for row in airflow.scenarios + airflow.baselines %}<tr><td>{{ row.id }}</td>
<td class="{{ 'sig-bad' if row.passed == false else 'sig-ok' }}">{{ 'FAILED' if row.passed == false else ('passed' if row.passed else 'baseline') }}{% if row.error %}: {{ row.error }}{% endif %}</td>
<td>{{ row.submissions if row.submissions is not none else (row.posts_at_proxy if row.posts_at_proxy is not none else '') }}</td>
<td>{{ row.effects if row.effects is not none else '' }}</td>
<td>{{ row.worker_time.get('task_process_seconds_after_submit', '') }}</td></tr>{% endfor %}</tbody></table>
<p class="note">{% for name, value in airflow.figures|dictsort %}{{ name }} = {{ value }}{% if not loop.last %} · {% endif %}{% endfor %}</p>
{% endif %}

<h2 id="rows">Rows</h2>
<p class="note">Timelines: one slot per mutation request in the order it left the sink (the wire tap's clock,
the only one the history shares), time since the first request below. Sink lane: <b>ok</b> response
received, <b>info</b> sent with no response (the sink cannot know the effect). Proxy lane: forwarded (ok)
or stopped (fail). Receiver lane: ground-truth effects under the request that caused them; an outlined red
diamond is a duplicate.</p>
{% for row in rows %}<section class="row" id="{{ row.anchor }}">
<h3>{{ row.row_id }}</h3>
<p class="meta">family {{ row.family }} · accepted endings {{ row.expect }} · fault <code>{{ row.fault }}</code>
{% if row.seed_effect %} · seed: {{ row.seed_effect }}{% endif %}</p>
{% for part in row.parts %}<h4>{{ part.sink }} ({{ part.role }}) — <span class="banner {{ part.css }}">{{ part.verdict }}</span>
{% if part.ending %} ended: {{ part.ending }}{% endif %}</h4>
{% if part.reasons %}<ul>{% for reason in part.reasons %}<li>{{ reason }}</li>{% endfor %}</ul>{% endif %}
<p class="note">exit codes {{ part.exit_codes }}{% if part.fault %} · {{ part.fault }}{% endif %}{% if part.history_note %} · {{ part.history_note }}{% endif %}</p>
{% if part.timeline %}{% set t = part.timeline %}<svg class="timeline" width="{{ t.width }}" height="{{ t.height }}"
 viewBox="0 0 {{ t.width }} {{ t.height }}" role="img" aria-label="timeline">
{% for lane, y in lanes %}<line class="lane" x1="{{ label_width }}" x2="{{ t.width - 10 }}" y1="{{ y }}" y2="{{ y }}"/>
<text x="4" y="{{ y + 4 }}">{{ lane }}</text>{% endfor %}
{% for m in t.marks %}{% if m.lane == 'receiver' %}<rect class="m-{{ m.kind }}" x="{{ m.x - 6 }}" y="{{ m.y - 6 }}"
 width="12" height="12" transform="rotate(45 {{ m.x }} {{ m.y }})"><title>{{ m.label }}</title></rect>
{% else %}<rect class="m-{{ m.kind }}" x="{{ m.x - 11 }}" y="{{ m.y - 7 }}" width="22" height="14" rx="3"><title>{{ m.label }}</title></rect>
{% endif %}{% endfor %}
{% for x, label in t.ticks %}<text x="{{ x }}" y="{{ t.height - 8 }}" text-anchor="middle">{{ label }}</text>{% endfor %}
</svg>{% if t.truncated %}<p class="note">first {{ t.shown_requests }} of {{ t.total_requests }} requests shown</p>{% endif %}
{% endif %}
{% if part.runs %}<table><thead><tr><th>run</th><th>kind</th><th>exit</th><th>days the sink reported</th></tr></thead><tbody>
{% for run in part.runs %}<tr><td>{{ run.index }}</td><td>{{ run.kind }}</td><td>{{ run.exit_code }}{% if run.timed_out %} (hung){% endif %}</td><td>{% for day, outcome in run.claims|dictsort %}
<code>{{ day }}</code>: {{ outcome }}{% if not loop.last %}, {% endif %}{% endfor %}</td></tr>{% endfor %}
</tbody></table>{% endif %}
{% endfor %}</section>
{% endfor %}
<p class="note">Written by <code>certify report</code>. Absolute times on a shared machine are noise; counters,
verdicts and ratios measured side by side are the evidence.</p>
</body>
</html>
"""
