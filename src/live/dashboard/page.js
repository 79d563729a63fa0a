"use strict";
// loadrig's live page: the run's events from /events (server-sent), drawn as SVG by the
// small plotting code below. Nothing is fetched but this page's own address.

const S = {
  run: 0, info: null, intervals: [], dist: [], shards: null, end: null,
  series: new Map(), server: [], bye: false, timer: null, historyIds: new Set(),
};
const $ = (id) => document.getElementById(id);
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function fmtNs(v) {
  if (!isFinite(v)) return "-";
  if (v < 1e3) return v.toFixed(0) + "ns";
  if (v < 1e6) return (v / 1e3).toPrecision(3) + "µs";
  if (v < 1e9) return (v / 1e6).toPrecision(3) + "ms";
  return (v / 1e9).toPrecision(3) + "s";
}

function fmtNum(v) {
  if (!isFinite(v)) return "-";
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toPrecision(3) + "G";
  if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
  if (a >= 1e4) return (v / 1e3).toPrecision(3) + "k";
  if (a >= 100 || v === Math.round(v)) return Math.round(v).toLocaleString("en");
  return v.toPrecision(3);
}

function fmtSecs(s) {
  if (s >= 3600) return (s / 3600).toFixed(1) + "h";
  if (s >= 60) return (s / 60).toFixed(1) + "m";
  return s.toFixed(s < 10 ? 1 : 0) + "s";
}

// ---- the plotting code: one line chart, linear or log y, with marks and a shaded span ----

function niceStep(span, count) {
  const raw = span / Math.max(count, 1);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

function linearTicks(lo, hi, count) {
  if (!(hi > lo)) hi = lo + 1;
  const step = niceStep(hi - lo, count);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(t);
  return { lo: Math.min(lo, ticks[0]), hi: Math.max(hi, ticks[ticks.length - 1]), ticks };
}

function logTicks(lo, hi) {
  let a = Math.floor(Math.log10(Math.max(lo, 1e-12)));
  let b = Math.ceil(Math.log10(Math.max(hi, 1e-12)));
  if (b <= a) b = a + 1;
  const ticks = [];
  for (let e = a; e <= b; e++) {
    ticks.push(Math.pow(10, e));
    if (b - a <= 2 && e < b) { ticks.push(2 * Math.pow(10, e)); ticks.push(5 * Math.pow(10, e)); }
  }
  return { lo: Math.pow(10, a), hi: Math.pow(10, b), ticks };
}

// opts: { title, series: [{name, pts: [[x, y]], color, area}], ylog, yfmt, xfmt, xticks,
//         xmin, xmax, ymin, ymax, marks: [{x, label}], shade: [x0, x1] | null }
function chart(fig, opts) {
  // Drawn at the figure's own width, so that the text keeps its size on any screen.
  const W = Math.max(300, Math.round((fig.clientWidth || 660) - 26));
  const H = W > 600 ? 240 : 190, L = 62, R = 12, T = 12, B = 28;
  const pts = opts.series.flatMap((s) => s.pts).filter((p) => isFinite(p[1]) && (!opts.ylog || p[1] > 0));
  let html = `<figcaption>${esc(opts.title)}</figcaption>`;
  if (!pts.length) {
    fig.innerHTML = html + `<div class="empty">${esc(opts.empty || "nothing yet")}</div>`;
    return;
  }
  const xs = pts.map((p) => p[0]);
  let x0 = opts.xmin ?? Math.min(...xs), x1 = opts.xmax ?? Math.max(...xs);
  if (!(x1 > x0)) x1 = x0 + 1;
  const ys = pts.map((p) => p[1]);
  let ylo = opts.ymin ?? (opts.ylog ? Math.min(...ys) : Math.min(0, ...ys));
  let yhi = opts.ymax ?? Math.max(...ys);
  const yt = opts.ylog ? logTicks(ylo, yhi) : linearTicks(ylo, yhi, 4);
  const ylog = (v) => Math.log10(Math.max(v, 1e-12));
  const Y = opts.ylog
    ? (v) => T + (H - T - B) * (1 - (ylog(v) - ylog(yt.lo)) / (ylog(yt.hi) - ylog(yt.lo)))
    : (v) => T + (H - T - B) * (1 - (v - yt.lo) / (yt.hi - yt.lo));
  const X = (v) => L + (W - L - R) * (v - x0) / (x1 - x0);
  const yfmt = opts.yfmt || fmtNum, xfmt = opts.xfmt || fmtSecs;
  let svg = `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(opts.title)}">`;
  if (opts.shade && opts.shade[1] > opts.shade[0]) {
    const a = X(Math.max(opts.shade[0], x0)), b = X(Math.min(opts.shade[1], x1));
    svg += `<rect class="warm" x="${a}" y="${T}" width="${Math.max(b - a, 0)}" height="${H - T - B}"><title>warm-up</title></rect>`;
  }
  for (const t of yt.ticks) {
    const y = Y(t);
    svg += `<line class="grid-line" x1="${L}" x2="${W - R}" y1="${y}" y2="${y}"/>`;
    svg += `<text x="${L - 6}" y="${y + 4}" text-anchor="end">${esc(yfmt(t))}</text>`;
  }
  const xt = opts.xticks || linearTicks(x0, x1, 6).ticks.filter((t) => t >= x0 - 1e-9 && t <= x1 + 1e-9).map((t) => [t, xfmt(t)]);
  for (const [t, label] of xt) {
    const x = X(t);
    svg += `<line class="axis" x1="${x}" x2="${x}" y1="${H - B}" y2="${H - B + 4}"/>`;
    svg += `<text x="${x}" y="${H - B + 16}" text-anchor="middle">${esc(label)}</text>`;
  }
  svg += `<line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>`;
  svg += `<line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/>`;
  for (const m of opts.marks || []) {
    if (m.x < x0 || m.x > x1) continue;
    const x = X(m.x);
    svg += `<line class="mark" x1="${x}" x2="${x}" y1="${T}" y2="${H - B}"/>`;
    svg += `<text class="mark-label" x="${x + 3}" y="${T + 10}">${esc(m.label)}</text>`;
  }
  opts.series.forEach((s, k) => {
    const color = s.color || COLORS[k % COLORS.length];
    const good = s.pts.filter((p) => isFinite(p[1]) && (!opts.ylog || p[1] > 0));
    if (!good.length) return;
    const d = good.map((p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(" ");
    if (s.area) {
      // A band from the axis up to the line (a stack is drawn tallest first).
      const base = `${X(good[good.length - 1][0]).toFixed(1)},${Y(0)} ${X(good[0][0]).toFixed(1)},${Y(0)}`;
      svg += `<polygon class="area" fill="${color}" points="${d} ${base}"><title>${esc(s.name)}</title></polygon>`;
      return;
    }
    svg += `<polyline class="line" stroke="${color}" points="${d}"><title>${esc(s.name)}</title></polyline>`;
    if (good.length === 1) {
      svg += `<circle cx="${X(good[0][0])}" cy="${Y(good[0][1])}" r="2.5" fill="${color}"/>`;
    }
  });
  svg += "</svg>";
  const legend = opts.series.map((s, k) =>
    `<span><i style="background:${s.color || COLORS[k % COLORS.length]}"></i>${esc(s.name)}</span>`).join("");
  fig.innerHTML = html + svg + `<div class="legend">${legend}</div>`;
}

// ---- what the events say ----

function secs(i) { return Math.max(i.end_s - i.start_s, 1e-9); }

function warmSpan() {
  const w = S.intervals.filter((i) => i.warmup);
  return w.length ? [w[0].start_s, w[w.length - 1].end_s] : null;
}

function stageOf(i) {
  const s = i.extra && i.extra.stage;
  if (s === undefined || s === null) return null;
  if (typeof s === "object") return String(s.name ?? s.label ?? s.index ?? JSON.stringify(s));
  return String(s);
}

// A mark where the stage changes (the interval records' `stage`, when they carry one).
function stageMarks() {
  const marks = [];
  let last = null;
  for (const i of S.intervals) {
    const s = stageOf(i);
    if (s !== null && s !== last) marks.push({ x: i.start_s, label: s });
    last = s;
  }
  return marks;
}

// Every number of the records' other fields, by its path (`server.target.gauges.x`); a
// list of objects is keyed by each one's name (or statement text) where it has one.
function flatten(v, path, out) {
  if (typeof v === "number") { out.push([path, v]); return; }
  if (Array.isArray(v)) {
    v.forEach((x, k) => {
      const key = x && typeof x === "object" ? (x.name ?? x.event ?? x.query ?? x.command ?? x.text ?? k) : k;
      flatten(x, `${path}[${key}]`, out);
    });
    return;
  }
  if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) flatten(x, path ? `${path}.${k}` : k, out);
  }
}

const MAX_SERIES = 400;

function takeSeries(i) {
  const extra = Object.assign({}, i.extra || {});
  delete extra.stage;
  addSeries(extra, i.end_s);
}

function addSeries(fields, x) {
  const out = [];
  flatten(fields, "", out);
  for (const [name, v] of out) {
    if (!S.series.has(name)) {
      if (S.series.size >= MAX_SERIES) continue;
      S.series.set(name, []);
    }
    S.series.get(name).push([x, v]);
  }
}

// ---- drawing ----

function drawThroughput(marks, shade) {
  const series = [
    { name: "ok/s", pts: S.intervals.map((i) => [i.end_s, i.ok / secs(i)]) },
    { name: "errors/s", pts: S.intervals.map((i) => [i.end_s, i.errors / secs(i)]), color: "#d62728" },
  ];
  const ops = S.info ? S.info.ops : [];
  if (ops.length > 1 && ops.length <= 8) {
    ops.forEach((name, k) => series.push({
      name: `${name} ok/s`, color: COLORS[(k + 2) % COLORS.length],
      pts: S.intervals.map((i) => [i.end_s, (i.ops[k] ? i.ops[k].ok : 0) / secs(i)]),
    }));
  }
  chart($("c-throughput"), { title: "operations per second, per interval", series, marks, shade, empty: "no interval yet" });
}

function drawLatency(marks, shade) {
  const box = $("c-latency");
  const ops = (S.info ? S.info.ops : []).slice(0, 12);
  while (box.children.length > ops.length) box.lastChild.remove();
  ops.forEach((name, k) => {
    let fig = box.children[k];
    if (!fig) { fig = document.createElement("figure"); fig.className = "chart"; box.appendChild(fig); }
    const pick = (f) => S.intervals.filter((i) => i.ops[k] && i.ops[k].ok > 0).map((i) => [i.end_s, i.ops[k][f]]);
    chart(fig, {
      title: `${name}: latency per interval`, ylog: true, yfmt: fmtNs, marks, shade,
      series: [["p50", "p50"], ["p90", "p90"], ["p99", "p99"], ["p99.9", "p999"], ["max", "max"]]
        .map(([label, f]) => ({ name: label, pts: pick(f) })),
      empty: "no successful operation yet",
    });
  });
}

const NINES = [[0, "0%"], [1, "90%"], [2, "99%"], [3, "99.9%"], [4, "99.99%"], [5, "99.999%"], [5.6, "max"]];

function drawDistribution() {
  const x = (q) => (q >= 1 ? 5.6 : Math.min(-Math.log10(1 - q), 5));
  const series = S.dist.map((d) => ({
    name: `${d.name} (${fmtNum(d.count)})`, pts: d.points.map(([q, v]) => [x(q), v]),
    color: d.name === "all operations" ? "#111" : undefined,
  }));
  chart($("c-dist"), {
    title: "latency at each percentile, measured intervals so far", ylog: true, yfmt: fmtNs,
    series, xmin: 0, xmax: 5.6, xticks: NINES, empty: "no measured operation yet",
  });
}

function drawValidity(marks, shade) {
  const rig = S.intervals.filter((i) => i.rig);
  chart($("c-cpu"), {
    title: "the rig's CPU (share of all cores)", yfmt: (v) => v.toFixed(0) + "%", marks, shade, ymin: 0,
    series: [{ name: "rig CPU %", pts: rig.map((i) => [i.end_s, 100 * i.rig.cpu_share]) }],
    empty: "no rig sample yet",
  });
  chart($("c-hiccup"), {
    title: "hiccups: how late the rig's timer thread woke", yfmt: fmtNs, marks, shade, ymin: 0,
    series: [
      { name: "p99", pts: rig.map((i) => [i.end_s, i.rig.hiccup_p99_ns]) },
      { name: "max", pts: rig.map((i) => [i.end_s, i.rig.hiccup_max_ns]), color: "#d62728" },
    ],
    empty: "no rig sample yet",
  });
  const fair = S.intervals.filter((i) => i.fairness && i.fairness.jain !== null);
  const last = fair[fair.length - 1];
  const starved = fair.reduce((n, i) => n + (i.fairness.starved || 0), 0);
  const caption = last
    ? `fairness over the clients: Jain's index (1 = every client alike); last interval min ${fmtNum(last.fairness.min)}, median ${fmtNum(last.fairness.median)}, max ${fmtNum(last.fairness.max)} ops per client; starved client-intervals ${starved}`
    : "fairness over the clients: Jain's index";
  chart($("c-fair"), {
    title: caption, ymin: 0, ymax: 1, yfmt: (v) => v.toFixed(2), marks, shade,
    series: [{ name: "Jain's index", pts: fair.map((i) => [i.end_s, i.fairness.jain]) }],
    empty: "no client counts yet",
  });
}

function drawServer(marks, shade) {
  const box = $("c-server");
  $("server-box").hidden = S.series.size === 0;
  if (!S.series.size) { box.innerHTML = ""; return; }
  const filter = $("filter").value.trim().toLowerCase();
  const names = [...S.series.keys()].filter((n) => !filter || n.toLowerCase().includes(filter));
  const shown = names.slice(0, 24);
  box.innerHTML = "";
  for (const name of shown) {
    const fig = document.createElement("figure");
    fig.className = "chart";
    box.appendChild(fig);
    chart(fig, { title: name, marks, shade, series: [{ name, pts: S.series.get(name) }] });
  }
  if (names.length > shown.length) {
    const more = document.createElement("p");
    more.className = "muted";
    more.textContent = `${names.length - shown.length} more series: narrow the filter to see them`;
    box.appendChild(more);
  }
}

// The server's panels of the HTML report (src/report/plot/server.rs), from the `server`
// events: one point per interval whose server figures have come.
const WAIT_ORDER = ["CPU", "Lock", "LWLock", "IO", "IPC", "Client", "BufferPin", "Activity", "Extension", "Timeout"];
const WAIT_COLORS = { CPU: "#2ca02c", Lock: "#d62728", LWLock: "#ff7f0e", IO: "#1f77b4", IPC: "#9467bd", Client: "#7f7f7f" };

function drawObserved(marks, shade) {
  const pts = S.server;
  $("observed-box").hidden = pts.length === 0;
  if (!pts.length) return;
  const line = (name, f, color) => ({ name, color, pts: pts.filter((p) => p[f] !== null && p[f] !== undefined).map((p) => [p.end_s, p[f]]) });
  const keep = (series) => series.filter((s) => s.pts.length);
  const label = (pts.find((p) => p.rate_label) || {}).rate_label;
  chart($("c-srv-rate"), {
    title: "per second: the clients' operations and the server's own count", marks, shade, ymin: 0,
    series: keep([line("clients: successful operations/s", "ok_per_s", COLORS[0]), line(label || "server", "rate", COLORS[1])]),
  });
  chart($("c-srv-latency"), {
    title: "ms: the clients' latency and the server's time per statement", marks, shade, ymin: 0,
    series: keep([line("clients: p99", "p99_ms", COLORS[1]), line("clients: p50", "p50_ms", COLORS[0]),
      line("server: execution time per statement (mean)", "ms_per_call", COLORS[3])]),
  });
  chart($("c-srv-cpu"), {
    title: "cores: the server's CPU, its threads waiting for a CPU, the rig's CPU", marks, shade, ymin: 0,
    series: keep([line("server: CPU (cores busy)", "cpu_cores", COLORS[2]),
      line("server: waiting for a CPU (threads, mean)", "run_queue", COLORS[1]),
      line("rig: CPU (cores busy)", "rig_cores", COLORS[8])]),
    empty: "the server's processes are not observed",
  });
  // The wait classes stacked to 100 %, in the order the intervals give them (CPU first).
  const classes = [];
  for (const p of pts) for (const [c] of p.waits || []) if (!classes.includes(c)) classes.push(c);
  const rank = (c) => { const k = WAIT_ORDER.indexOf(c); return k < 0 ? WAIT_ORDER.length : k; };
  classes.sort((a, b) => rank(a) - rank(b));
  const stacked = pts.filter((p) => p.waits && p.waits.length);
  // As in the report, no panel where the server's sessions are not sampled.
  $("c-srv-waits").hidden = stacked.length === 0;
  const bands = classes.map((c, j) => ({
    name: `${c} (wait class)`, area: true, color: WAIT_COLORS[c] || COLORS[(5 + j) % COLORS.length],
    pts: stacked.map((p) => [p.end_s, p.waits.filter(([k]) => classes.indexOf(k) <= j).reduce((a, [, v]) => a + v, 0)]),
  })).reverse();
  chart($("c-srv-waits"), {
    title: "share of the backends' active time, by wait class", marks, shade, ymin: 0, ymax: 1,
    yfmt: (v) => (100 * v).toFixed(0) + "%", series: bands,
    empty: "no wait sample (PostgreSQL's sessions are sampled)",
  });
}

function drawErrors() {
  const by = new Map();
  for (const i of S.intervals) {
    if (i.warmup) continue;
    for (const o of i.ops) {
      for (const [cls, n] of Object.entries(o.by_class || {})) {
        const key = `${o.name}\u0000${cls}`;
        by.set(key, (by.get(key) || 0) + n);
      }
    }
  }
  const rows = [...by.entries()].map(([k, n]) => {
    const [op, cls] = k.split("\u0000");
    return `<tr><td class="text">${esc(op)}</td><td class="text">${esc(cls)}</td><td>${fmtNum(n)}</td></tr>`;
  });
  $("errors").innerHTML = `<tr><th class="text">operation</th><th class="text">class</th><th>errors</th></tr>` +
    (rows.length ? rows.join("") : `<tr><td class="text" colspan="3">none</td></tr>`);
}

function drawShards() {
  if (!S.shards) return;
  $("shards-box").hidden = false;
  const rows = S.shards.shards || [];
  const keys = rows.length ? Object.keys(rows[0]) : [];
  $("shards").innerHTML = `<tr>${keys.map((k) => `<th class="text">${esc(k)}</th>`).join("")}</tr>` +
    rows.map((r) => `<tr>${keys.map((k) => `<td class="text">${esc(r[k] ?? "")}</td>`).join("")}</tr>`).join("");
  $("shards-line").textContent = S.shards.line || "";
}

function draw() {
  S.timer = null;
  const marks = stageMarks(), shade = warmSpan();
  drawThroughput(marks, shade);
  drawLatency(marks, shade);
  drawDistribution();
  drawValidity(marks, shade);
  drawObserved(marks, shade);
  drawServer(marks, shade);
  drawErrors();
  drawShards();
}

// Drawn at most every 200 ms however fast events come (a page opened late gets them all
// at once).
function schedule() {
  if (S.timer === null) S.timer = setTimeout(draw, 200);
}

function setState(state, text) {
  document.body.dataset.state = state;
  $("state").textContent = text;
}

function log(text) {
  const li = document.createElement("li");
  li.textContent = text;
  $("log").appendChild(li);
}

// ---- the events ----

function begin(d) {
  Object.assign(S, { run: d.id, info: d.info, intervals: [], dist: [], shards: null, end: null, series: new Map(), server: [] });
  const info = d.info;
  $("title").textContent = info.title;
  $("subtitle").textContent = [info.subtitle, info.label].filter(Boolean).join(" · ");
  document.title = `loadrig live: ${info.title}`;
  $("interval-count").textContent = "0";
  $("observed-count").textContent = "0";
  $("end-box").hidden = true;
  $("shards-box").hidden = true;
  $("log").innerHTML = "";
  setState("waiting", "starting");
  log(`run ${d.id} began: ${info.title}`);
  schedule();
}

function interval(d) {
  S.intervals.push(d);
  if (d.dist && d.dist.length) S.dist = d.dist;
  takeSeries(d);
  $("interval-count").textContent = String(S.intervals.length);
  const planned = S.info && S.info.planned_s ? S.info.planned_s + S.info.warmup_s : null;
  $("elapsed").textContent = `${fmtSecs(d.end_s)}${planned ? " of " + fmtSecs(planned) : ""}`;
  if (!S.end) {
    const stage = stageOf(d);
    setState(d.warmup ? "warmup" : "running", (d.warmup ? "warming up" : "running") + (stage ? ` · ${stage}` : ""));
  }
  schedule();
}

// An interval's server figures, a moment after the interval itself.
function server(d) {
  S.server.push(d);
  if (d.server) {
    // Its readings' times are not series.
    const { start_s, end_s, ...figures } = d.server;
    addSeries({ server: figures }, d.end_s);
  }
  $("observed-count").textContent = String(S.server.length);
  schedule();
}

function summaryRow(o) {
  const l = o.latency;
  return `<tr><td class="text">${esc(o.name)}</td><td>${fmtNum(o.ok)}</td><td>${fmtNum(o.errors)}</td>` +
    `<td>${fmtNum(o.per_s)}</td><td>${fmtNs(l.mean)}</td><td>${fmtNs(l.p50)}</td><td>${fmtNs(l.p90)}</td>` +
    `<td>${fmtNs(l.p99)}</td><td>${fmtNs(l.p999)}</td><td>${fmtNs(l.max)}</td></tr>`;
}

function end(d) {
  S.end = d;
  const s = d.summary;
  $("end-box").hidden = false;
  $("summary").innerHTML = `<tr><th class="text">operation</th><th>ok</th><th>errors</th><th>ops/s</th>` +
    `<th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>` +
    s.ops.map(summaryRow).join("") + (s.ops.length > 1 ? summaryRow(s.total) : "");
  const v = $("verdict");
  v.textContent = s.verdict ? `verdict: ${s.verdict}` : "";
  v.className = s.verdict ? (s.verdict === "valid" ? "valid" : "suspect") : "";
  $("notes").innerHTML = (s.notes || []).map((n) => `<li>${esc(n)}</li>`).join("");
  setState("ended", `ended: ${s.status}, ${fmtSecs(s.measured_s)} measured`);
  log(`run ${d.id} ended: ${s.status}`);
  offerReport(d);
  addHistory(d);
}

// The report is fetched at once and kept in the page, so that it can be saved after the
// process has gone.
function offerReport(d) {
  const box = $("report-links");
  box.innerHTML = "";
  const save = document.createElement("a");
  save.id = "save-report";
  save.textContent = "Save the HTML report";
  save.href = d.report;
  save.download = `loadrig-run-${d.id}.html`;
  const open = document.createElement("a");
  open.textContent = "open the report";
  open.href = d.report;
  open.target = "_blank";
  const result = document.createElement("a");
  result.textContent = "result.json";
  result.href = d.result;
  result.download = `loadrig-run-${d.id}.json`;
  box.append(save, open, result);
  fetch(d.report).then((r) => (r.ok ? r.blob() : Promise.reject(r.status))).then((blob) => {
    const url = URL.createObjectURL(blob);
    save.href = url;
    open.href = url;
    box.dataset.bytes = String(blob.size);
    box.dataset.ready = "1";
  }).catch((e) => log(`the report could not be fetched (${e}); the links work while the process runs`));
}

function addHistory(d) {
  if (S.historyIds.has(d.id)) return;
  S.historyIds.add(d.id);
  $("history-box").hidden = false;
  const li = document.createElement("li");
  li.innerHTML = `run ${d.id}: ${esc(d.title)} (${esc(d.summary.status)}) · <a href="${esc(d.report)}" target="_blank">report</a> · <a href="${esc(d.result)}">result.json</a>`;
  $("history").appendChild(li);
}

const es = new EventSource("/events");
es.addEventListener("open", () => { $("conn").textContent = "live"; });
es.addEventListener("error", () => {
  $("conn").textContent = S.bye ? "" : "connection lost; trying again…";
});
es.addEventListener("history", (e) => {
  const runs = JSON.parse(e.data).runs;
  $("history").innerHTML = "";
  S.historyIds.clear();
  $("history-box").hidden = runs.length === 0;
  for (const r of runs) addHistory(r);
});
es.addEventListener("run", (e) => begin(JSON.parse(e.data)));
es.addEventListener("interval", (e) => interval(JSON.parse(e.data)));
es.addEventListener("server", (e) => server(JSON.parse(e.data)));
es.addEventListener("shards", (e) => { S.shards = JSON.parse(e.data); schedule(); });
es.addEventListener("note", (e) => log(JSON.parse(e.data).text));
es.addEventListener("end", (e) => end(JSON.parse(e.data)));
es.addEventListener("bye", () => {
  S.bye = true;
  es.close();
  $("conn").textContent = "the process has ended; this page keeps what it received";
  if (!S.end) setState("gone", "the process ended");
});
$("filter").addEventListener("input", schedule);
