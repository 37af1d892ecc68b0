/*
 * The report page's own script and style, inlined and allowed by their sha256 hashes in the
 * page's Content-Security-Policy (no other script can run, nothing is fetched).
 *
 * Security: every value from the log (commands, actors, reasons, names) reaches the page only
 * as text (textContent, setAttribute, SVG attributes), never as markup. The data sits in a
 * `<script type="application/json">` block, which the browser never runs, with `<`, `>`, `&`
 * and the JS line separators escaped so no value can end the block.
 *
 * Filters live in the URL fragment (`#decision=denied&secret=...&run=...`), so a filtered view
 * can be bookmarked, shared or opened by a script; the form and the fragment stay in step.
 */

export const REPORT_STYLE = String.raw`
:root{--ok:#5b8fd6;--deny:#d93025;--fail:#e8a317;--ink:#1d1d1f;--mute:#5f6368;--line:#e1e3e6;--bg:#f7f8fa}
*{box-sizing:border-box}
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--ink);background:var(--bg)}
header{background:#1f2933;color:#fff;padding:14px 24px}
header h1{font-size:18px;margin:0 0 2px;font-weight:600}header .meta{color:#c5ccd3;font-size:12px}
main{padding:12px 24px 40px}
nav.sections{display:flex;gap:14px;margin:8px 0 0}nav.sections a{color:#9fd0ff;text-decoration:none;font-size:12px}
.verify{padding:8px 12px;border-radius:6px;font-weight:600;margin:12px 0}.verify.ok{background:#e3f5e1;color:#185c12}
.verify.broken{background:#a50e0e;color:#fff}.verify.unknown{background:#ececec}.verify .caveat{display:block;font-weight:400;font-size:12px;margin-top:2px}
.cards{display:flex;gap:10px;flex-wrap:wrap;margin:8px 0 14px}.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:96px;color:var(--mute)}
.card b{display:block;font-size:22px;color:var(--ink)}.card.deny b{color:var(--deny)}.card.fail b{color:#a06800}
.panel{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 14px;margin:0 0 14px}
.panel h2{font-size:14px;margin:0 0 8px;font-weight:600}.panel h2 small{color:var(--mute);font-weight:400;margin-left:6px}
form.filters{display:grid;grid-template-columns:repeat(7,minmax(0,1fr));gap:8px;align-items:end}
form.filters label{display:flex;flex-direction:column;font-size:11px;color:var(--mute);gap:2px}
form.filters input::placeholder{color:#a0a4a8}form.filters input,form.filters select{font:inherit;padding:4px 6px;border:1px solid #c9ccd1;border-radius:5px;background:#fff;min-width:0}
form.filters button{font:inherit;padding:5px 10px;border:1px solid #c9ccd1;border-radius:5px;background:#f1f3f4;cursor:pointer}
.shown{color:var(--mute);font-size:12px;margin-top:8px}
svg.chart{width:100%;height:150px;display:block}svg.chart rect.a{fill:var(--ok)}svg.chart rect.d{fill:var(--deny)}svg.chart rect.f{fill:var(--fail)}
svg.chart g.bar{cursor:pointer}svg.chart g.bar:hover rect{opacity:.75}svg.chart line{stroke:#9aa0a6}svg.chart text{font-size:10px;fill:var(--mute)}
.legend{font-size:12px;color:var(--mute)}.k{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;vertical-align:-1px}
.k.a{background:var(--ok)}.k.d{background:var(--deny)}.k.f{background:var(--fail)}
.split{display:grid;grid-template-columns:minmax(0,1fr) 420px;gap:14px;align-items:start}
.scroll{max-height:560px;overflow:auto}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600;position:sticky;top:0;z-index:1;font-size:12px}
td.num,th.num{text-align:right}td.time{white-space:nowrap;font:11px ui-monospace,monospace;color:var(--mute)}
td.cmd{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all;max-width:520px}
tr.run{cursor:pointer}tr.run:hover{background:#f1f6ff}tr.run.sel{background:#dbe9ff}
tr.denied td.dec{color:var(--deny);font-weight:700}tr.failed td.exit,tr.rejected td.dec{color:#a06800;font-weight:700}
.pill{display:inline-block;font:11px ui-monospace,monospace;background:#eef1ff;border-radius:3px;padding:0 4px;margin:0 3px 2px 0}
.pill.miss{background:#eee;color:#777}.pill.den{background:#fde2e1;color:#8c1d18}
a.link,button.link{color:#1a5fb4;cursor:pointer;background:none;border:0;padding:0;font:inherit;text-decoration:underline;text-align:left}
#detail{position:sticky;top:8px}#detail dl{display:grid;grid-template-columns:110px minmax(0,1fr);gap:3px 8px;margin:0}
#detail dt{color:var(--mute)}#detail dd{margin:0;word-break:break-word}#detail dd.code{font:12px ui-monospace,monospace;white-space:pre-wrap}
#detail pre{font:11px ui-monospace,monospace;background:#f6f7f9;padding:6px;border-radius:4px;white-space:pre-wrap;word-break:break-all;margin:0}
.empty{color:var(--mute)}.warn{color:#8c1d18;font-weight:600}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:14px}
details summary{cursor:pointer}details .more{padding:6px 0 6px 12px;font-size:12px}
@media (max-width:1100px){.split,.grid2{grid-template-columns:1fr}form.filters{grid-template-columns:repeat(3,minmax(0,1fr))}}
`;

export const REPORT_SCRIPT = String.raw`
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('execgate-data').textContent);
  var S = data.strings;
  var runs = data.runs;
  var PAGE = 300;
  var shownLimit = PAGE;
  // Controls and bidi overrides in log text are shown as visible escapes (as in the terminal
  // output): an override could make a command read differently than it ran.
  var INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
  function vis(text) { return text.replace(INVISIBLE, function (c) { return '\\u{' + c.charCodeAt(0).toString(16) + '}'; }); }
  function str(i) { return i >= 0 ? S[i] : undefined; }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) for (var key in attrs) if (attrs[key] !== undefined) node.setAttribute(key, attrs[key]);
    if (children !== undefined) (Array.isArray(children) ? children : [children]).forEach(function (child) {
      if (child === undefined || child === null) return;
      node.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(vis(String(child))) : child);
    });
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function fmtTime(iso) { return iso ? iso.replace('T', ' ').replace('Z', '') : '-'; }
  function fmtMs(ms) {
    if (ms === undefined) return '-';
    if (ms < 1000) return Math.round(ms) + 'ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + 's';
    return Math.floor(ms / 60000) + 'm' + Math.round((ms % 60000) / 1000) + 's';
  }
  var DECISION_LABEL = { allowed: 'allowed', denied: 'denied', rejected: 'rejected', requested: 'no decision' };

  // ---- filters <-> URL fragment
  var FIELDS = ['actor', 'decision', 'secret', 'q', 'from', 'to'];
  function readHash() {
    var state = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (part) {
      if (!part) return;
      var at = part.indexOf('=');
      var key = decodeURIComponent(at < 0 ? part : part.slice(0, at));
      var value = at < 0 ? '' : decodeURIComponent(part.slice(at + 1).replace(/\+/g, ' '));
      state[key] = value;
    });
    return state;
  }
  function writeHash(state) {
    var parts = [];
    FIELDS.concat(['run']).forEach(function (key) { if (state[key]) parts.push(key + '=' + encodeURIComponent(state[key])); });
    var next = parts.length ? '#' + parts.join('&') : '';
    // A fragment-only replace: same document, no history entry; hashchange renders.
    if (next === location.hash) render();
    else location.replace(next || '#');
  }
  var form = document.getElementById('filters');
  function formState() {
    var state = {};
    FIELDS.forEach(function (key) { state[key] = form.elements[key].value; });
    var current = readHash();
    if (current.run) state.run = current.run;
    return state;
  }
  function toIso(text) {
    if (!text) return undefined;
    var time = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(text) || text.length <= 10 ? text : text + 'Z');
    return isNaN(time) ? undefined : new Date(time).toISOString();
  }
  function matches(run, state) {
    if (state.actor && (str(run.a) || '').toLowerCase().indexOf(state.actor.toLowerCase()) < 0) return false;
    if (state.decision) {
      if (state.decision === 'failed' ? run.o !== 2 : run.d !== state.decision) return false;
    }
    if (state.secret && !run.refs.some(function (ref) { return S[ref[0]] === state.secret; })) return false;
    if (state.q && (str(run.c) || '').toLowerCase().indexOf(state.q.toLowerCase()) < 0) return false;
    var from = toIso(state.from);
    var to = toIso(state.to);
    if (from && run.t < from) return false;
    if (to && run.t >= to) return false;
    return true;
  }
  function isFiltered(state) { return FIELDS.some(function (key) { return !!state[key]; }); }

  // ---- timeline
  function bucketsFor(times) {
    var first = Infinity, last = -Infinity;
    times.forEach(function (entry) { if (entry[0] < first) first = entry[0]; if (entry[0] > last) last = entry[0]; });
    if (first === Infinity) return undefined;
    var bucket = data.buckets[data.buckets.length - 1];
    for (var i = 0; i < data.buckets.length; i++) if ((last - first) / data.buckets[i].ms + 1 <= data.maxBars) { bucket = data.buckets[i]; break; }
    var start = Math.floor(first / bucket.ms) * bucket.ms;
    var count = Math.floor((last - start) / bucket.ms) + 1;
    var bars = [];
    for (var b = 0; b < count; b++) bars.push([0, 0, 0]);
    times.forEach(function (entry) { bars[Math.floor((entry[0] - start) / bucket.ms)][entry[1]]++; });
    return { start: start, bucketMs: bucket.ms, label: bucket.label, bars: bars };
  }
  function drawTimeline(timeline, note) {
    var box = clear(document.getElementById('timeline-chart'));
    var caption = clear(document.getElementById('timeline-caption'));
    if (!timeline) { box.appendChild(el('p', { class: 'empty' }, 'No runs in this view.')); return; }
    var W = 1000, H = 150, top = 8, bottom = 22;
    var max = 1;
    timeline.bars.forEach(function (bar) { max = Math.max(max, bar[0] + bar[1] + bar[2]); });
    var chart = svg('svg', { class: 'chart', viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', role: 'img', 'aria-label': 'runs per ' + timeline.label });
    var slot = W / timeline.bars.length;
    var gap = slot > 6 ? Math.min(3, slot * 0.15) : 0;
    timeline.bars.forEach(function (bar, index) {
      var startMs = timeline.start + index * timeline.bucketMs;
      var g = svg('g', { class: 'bar', 'data-start': new Date(startMs).toISOString() });
      var y = H - bottom;
      [[0, 'a'], [2, 'f'], [1, 'd']].forEach(function (part) {
        var value = bar[part[0]];
        if (!value) return;
        var h = (value / max) * (H - top - bottom);
        y -= h;
        g.appendChild(svg('rect', { class: part[1], x: (index * slot + gap / 2).toFixed(2), y: y.toFixed(2), width: Math.max(0.5, slot - gap).toFixed(2), height: h.toFixed(2) }));
      });
      g.appendChild(svg('rect', { x: (index * slot).toFixed(2), y: 0, width: slot.toFixed(2), height: H - bottom, fill: 'transparent' }));
      var title = svg('title', {});
      title.textContent = fmtTime(new Date(startMs).toISOString()) + ' UTC, one ' + timeline.label + ': ' + bar[0] + ' allowed, ' + bar[1] + ' denied, ' + bar[2] + ' failed (click to zoom in)';
      g.appendChild(title);
      g.addEventListener('click', function () {
        var state = formState();
        state.from = new Date(startMs).toISOString();
        state.to = new Date(startMs + timeline.bucketMs).toISOString();
        setForm(state);
        writeHash(state);
      });
      chart.appendChild(g);
    });
    chart.appendChild(svg('line', { x1: 0, x2: W, y1: H - bottom, y2: H - bottom }));
    var ticks = Math.min(6, timeline.bars.length);
    for (var t = 0; t < ticks; t++) {
      var index = Math.round((t * (timeline.bars.length - 1)) / Math.max(1, ticks - 1));
      var label = svg('text', { x: Math.min(W - 4, Math.max(4, (index + 0.5) * slot)).toFixed(1), y: H - 6, 'text-anchor': t === 0 ? 'start' : t === ticks - 1 ? 'end' : 'middle' });
      label.textContent = fmtTime(new Date(timeline.start + index * timeline.bucketMs).toISOString()).slice(0, timeline.bucketMs >= 86400000 ? 10 : 19);
      chart.appendChild(label);
    }
    box.appendChild(chart);
    caption.appendChild(document.createTextNode('One bar per ' + timeline.label + ', ' + timeline.bars.length + ' bar(s), from ' + fmtTime(new Date(timeline.start).toISOString()) + ' UTC. ' + note));
  }

  // ---- runs table and the panel per run
  function decisionClass(run) { return 'run ' + (run.d === 'denied' ? 'denied' : run.d === 'rejected' ? 'rejected' : run.o === 2 ? 'failed' : 'allowed'); }
  function refPills(run) {
    return run.refs.map(function (ref) {
      return el('span', { class: 'pill' + (run.d === 'denied' || run.d === 'rejected' ? ' den' : ref[1] === 0 ? ' miss' : '') }, S[ref[0]]);
    });
  }
  function renderRows(list, state) {
    var body = clear(document.getElementById('runs-body'));
    list.slice(-shownLimit).reverse().forEach(function (run) {
      var row = el('tr', { class: decisionClass(run) + (state.run === run.i ? ' sel' : ''), 'data-run-id': run.i }, [
        el('td', { class: 'time' }, fmtTime(run.t)),
        el('td', {}, str(run.a) || '-'),
        el('td', { class: 'dec' }, DECISION_LABEL[run.d] || run.d),
        el('td', { class: 'exit' }, run.x),
        el('td', { class: 'num' }, fmtMs(run.ms)),
        el('td', { class: 'cmd' }, str(run.c) || '-'),
        el('td', {}, refPills(run)),
      ]);
      row.addEventListener('click', function () { var next = readHash(); next.run = run.i; writeHash(next); });
      body.appendChild(row);
    });
    var more = clear(document.getElementById('runs-more'));
    if (list.length > shownLimit) {
      var button = el('button', { type: 'button', class: 'link' }, 'show ' + Math.min(PAGE, list.length - shownLimit) + ' more of ' + (list.length - shownLimit) + ' older');
      button.addEventListener('click', function () { shownLimit += PAGE; render(); });
      more.appendChild(button);
    }
  }
  function row(dl, label, value, cls) {
    if (value === undefined || value === null || value === '') return;
    dl.appendChild(el('dt', {}, label));
    dl.appendChild(el('dd', cls ? { class: cls } : {}, value));
  }
  // Consecutive identical events shown once with a count (a run's many egress decisions).
  function collapseRepeats(events) {
    var out = [];
    for (var i = 0; i < events.length;) {
      var j = i;
      while (j < events.length && events[j] === events[i]) j++;
      out.push(events[i] + (j - i > 1 ? ' \u00d7' + (j - i) : ''));
      i = j;
    }
    return out;
  }
  function renderDetail(id) {
    var box = clear(document.getElementById('detail-body'));
    var title = clear(document.getElementById('detail-title'));
    if (!id) { title.appendChild(document.createTextNode('Run detail')); box.appendChild(el('p', { class: 'empty' }, 'Click a run to see everything the log knows about it.')); return; }
    title.appendChild(document.createTextNode('Run ' + id));
    var run = runs.filter(function (r) { return r.i === id; })[0];
    if (!run) { box.appendChild(el('p', { class: 'empty' }, 'This run is not among the runs embedded in this page; run: execgate audit show ' + id)); return; }
    var dl = el('dl');
    row(dl, 'command', str(run.c) || '-', 'code');
    row(dl, 'actor', str(run.a));
    row(dl, 'cwd', str(run.w), 'code');
    row(dl, 'mode', str(run.m));
    row(dl, 'time', fmtTime(run.t) + ' to ' + fmtTime(run.e) + ' UTC');
    row(dl, 'decision', (DECISION_LABEL[run.d] || run.d) + (str(run.r) ? ' by rule ' + str(run.r) : ''));
    row(dl, 'reason', str(run.why));
    row(dl, 'policy', str(run.p), 'code');
    row(dl, 'code', str(run.code), 'code');
    row(dl, 'message', str(run.msg));
    row(dl, 'exit', run.x + (run.st ? ' (' + run.st + ')' : '') + (run.to ? ', timed out' : '') + (run.k ? ', killed' : ''));
    row(dl, 'duration', run.ms !== undefined ? fmtMs(run.ms) : undefined);
    row(dl, 'redactions', run.red);
    if (run.refs.length) {
      var list = el('div');
      run.refs.forEach(function (ref) {
        var state = run.d === 'denied' || run.d === 'rejected' ? 'requested, never resolved (' + run.d + ')' : ref[1] === 0 ? 'not found, left literal' : 'from ' + (str(ref[2]) || '?');
        list.appendChild(el('div', {}, [el('span', { class: 'pill' }, S[ref[0]]), ' ' + state + (str(ref[3]) ? ', value ' + str(ref[3]) : '')]));
      });
      row(dl, 'references', list);
    }
    row(dl, 'env removed', run.rm ? run.rm.map(str).join(', ') : undefined, 'code');
    row(dl, 'env withheld', run.wh ? run.wh.map(str).join(', ') : undefined, 'code');
    if (run.eg) {
      // Identical decisions are counted, never folded into one: "x3" is three requests.
      var egress = el('div');
      run.eg.d.forEach(function (pair) {
        egress.appendChild(el('div', { class: 'code' }, [S[pair[0]], pair[1] > 1 ? el('span', { class: 'pill' }, '\u00d7' + pair[1]) : '']));
      });
      if (run.eg.more) egress.appendChild(el('div', {}, 'and ' + run.eg.more + ' more; run: execgate audit show ' + run.i));
      row(dl, 'egress (' + run.eg.n + ')', egress);
    }
    if (run.sh) {
      var ssh = el('div');
      run.sh.d.forEach(function (pair) {
        ssh.appendChild(el('div', { class: 'code' }, [S[pair[0]], pair[1] > 1 ? el('span', { class: 'pill' }, '\u00d7' + pair[1]) : '']));
      });
      if (run.sh.more) ssh.appendChild(el('div', {}, 'and ' + run.sh.more + ' more; run: execgate audit show ' + run.i));
      row(dl, 'ssh agent (' + run.sh.n + ')', ssh);
    }
    row(dl, 'records', collapseRepeats(run.ev).join(' \u2192 '));
    if (run.extra) {
      Object.keys(run.extra).forEach(function (key) {
        var value = run.extra[key];
        row(dl, key, el('pre', {}, typeof value === 'string' ? value : JSON.stringify(value, null, 1)));
      });
    }
    box.appendChild(dl);
  }

  // ---- secrets and actors (exact over the whole period)
  function filterLink(label, key, value) {
    var link = el('button', { type: 'button', class: 'link' }, label);
    link.addEventListener('click', function () { var state = formState(); state[key] = value; setForm(state); writeHash(state); });
    return link;
  }
  function runLink(id) {
    var link = el('button', { type: 'button', class: 'link' }, id);
    link.addEventListener('click', function () { var state = readHash(); state.run = id; writeHash(state); });
    return link;
  }
  function pairs(list) { return list.map(function (p) { return p[0] + ' (' + p[1] + ')'; }).join(', '); }
  function renderSecrets() {
    var body = document.getElementById('secrets-body');
    if (!data.secrets.length) { body.parentNode.parentNode.replaceChild(el('p', { class: 'empty' }, 'No reference was named in this period.'), body.parentNode); return; }
    data.secrets.forEach(function (use) {
      var details = el('details', {}, [el('summary', {}, 'details'), el('div', { class: 'more' }, [
        el('div', {}, 'Who: ' + (pairs(use.actors) || '-')),
        el('div', {}, 'Commands: ' + (pairs(use.commands) || '-')),
        el('div', {}, ['Denied or rejected attempts (latest): '].concat(use.deniedRuns.length ? use.deniedRuns.map(function (d, i) { return el('span', {}, [i ? ', ' : '', runLink(d.runId), ' ' + d.decision + ' for ' + d.actor]); }) : ['none'])),
        el('div', {}, ['Value changes (rotations): '].concat(use.rotations.length ? use.rotations.map(function (r, i) { return el('span', {}, [i ? '; ' : '', fmtTime(r.time) + ' ', runLink(r.runId), ' ' + r.from.slice(-8) + '\u2192' + r.to.slice(-8)]); }) : ['none seen'])),
      ])]);
      body.appendChild(el('tr', { class: 'secret', 'data-ref': use.ref }, [
        el('td', {}, filterLink(use.ref, 'secret', use.ref)),
        el('td', { class: 'num' }, use.runs),
        el('td', { class: 'num' }, use.allowed),
        el('td', { class: 'num' + (use.denied + use.rejected ? ' warn' : '') }, use.denied + use.rejected),
        el('td', { class: 'num' }, use.failed),
        el('td', { class: 'num' }, use.notFound),
        el('td', {}, Object.keys(use.sources).map(function (k) { return k + ' (' + use.sources[k] + ')'; }).join(', ') || '-'),
        el('td', {}, use.actors.slice(0, 3).map(function (p) { return p[0]; }).join(', ') + (use.actors.length > 3 ? ', \u2026' : '')),
        el('td', { class: 'num' }, use.fingerprints),
        el('td', { class: 'num' + (use.rotations.length ? ' warn' : '') }, use.rotations.length),
        el('td', {}, details),
      ]));
    });
  }
  function renderActors() {
    var body = document.getElementById('actors-body');
    data.actors.forEach(function (actor) {
      body.appendChild(el('tr', { class: 'actor' }, [
        el('td', {}, filterLink(actor.actor, 'actor', actor.actor)),
        el('td', { class: 'num' }, actor.runs),
        el('td', { class: 'num' }, actor.allowed),
        el('td', { class: 'num' + (actor.denied ? ' warn' : '') }, actor.denied),
        el('td', { class: 'num' }, actor.failed),
        el('td', {}, pairs(actor.secrets) || '-'),
        el('td', { class: 'cmd' }, actor.commands.map(function (p) { return p[0]; }).slice(0, 3).join('\n')),
        el('td', { class: 'time' }, fmtTime(actor.firstTime) + '\n' + fmtTime(actor.lastTime)),
      ]));
    });
  }

  // ---- the form
  function setForm(state) { FIELDS.forEach(function (key) { form.elements[key].value = state[key] || ''; }); }
  var secretSelect = form.elements.secret;
  data.secrets.forEach(function (use) { secretSelect.appendChild(el('option', { value: use.ref }, use.ref)); });
  var actorList = document.getElementById('actor-list');
  data.actors.forEach(function (actor) { actorList.appendChild(el('option', { value: actor.actor })); });
  form.addEventListener('input', function () { shownLimit = PAGE; writeHash(formState()); });
  form.addEventListener('submit', function (event) { event.preventDefault(); });
  document.getElementById('clear').addEventListener('click', function () { setForm({}); shownLimit = PAGE; writeHash({}); });

  function render() {
    var state = readHash();
    var list = runs.filter(function (run) { return matches(run, state); });
    var filtered = isFiltered(state);
    document.body.setAttribute('data-shown', String(list.length));
    var shown = clear(document.getElementById('shown'));
    shown.appendChild(document.createTextNode(
      (filtered ? list.length + ' run(s) match, of ' : 'All ') + runs.length + ' run(s) embedded in this page' +
      (data.sampled ? ' (of ' + data.totalRuns + ' in the log: the latest, the latest denied and failed, and a uniform sample; counts, timeline, secrets and actors below are exact over all of them)' : '') + '.'));
    if (filtered) {
      drawTimeline(bucketsFor(list.map(function (run) { return [Date.parse(run.t), run.o]; })), 'Counted over the ' + list.length + ' embedded run(s) that match the filters.');
    } else {
      drawTimeline(data.timeline, data.sampled ? 'Exact over all ' + data.totalRuns + ' runs.' : '');
    }
    renderRows(list, state);
    renderDetail(state.run);
  }
  setForm(readHash());
  renderSecrets();
  renderActors();
  window.addEventListener('hashchange', function () { setForm(readHash()); render(); });
  render();
  document.body.setAttribute('data-ready', '1');
})();
`;
