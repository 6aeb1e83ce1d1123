// Tessera's dashboard: each page polls the JSON behind its panels once a second and draws them with
// Chart.js (served by the node). Figures are written into elements with data-field attributes, so a
// reader or a browser test finds them by name. Nothing here sends anything but GET requests.
"use strict";

const POLL_MS = 1000;
const token = new URLSearchParams(location.search).get("token");
const page = document.body.dataset.page;
const main = document.getElementById("main");
const charts = {};
const palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
                 "#4b5563", "#65a30d", "#7c3aed", "#0d9488"];
// Functions and simulations in the task stream: no red nor orange, which read as errors.
const runPalette = ["#2563eb", "#16a34a", "#9333ea", "#0891b2", "#ca8a04", "#4b5563", "#65a30d", "#7c3aed",
                    "#0d9488", "#1e40af", "#15803d", "#6b21a8"];

if (window.Chart) {
  Chart.defaults.animation = false;
  Chart.defaults.font.family = "Liberation Sans, Arial, sans-serif";
}

for (const link of document.querySelectorAll("nav a")) {
  if (link.dataset.nav === page) link.classList.add("current");
  if (token) link.href += "?token=" + encodeURIComponent(token);
}

async function getJson(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const response = await fetch(path, { headers, cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

// A section of the page, made once and refilled on each poll.
function section(id, build) {
  let node = document.getElementById(id);
  if (!node) {
    node = el("section", { id });
    main.append(node);
    build(node);
  }
  return node;
}

function integer(n) { return Number(n).toLocaleString("en-US"); }
function mib(bytes) { return (bytes / 1048576).toFixed(1) + " MiB"; }
function seconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 1e-3) return (s * 1e6).toFixed(0) + " µs";
  if (s < 1) return (s * 1e3).toFixed(1) + " ms";
  return s.toFixed(2) + " s";
}
function colour(i) { return palette[i % palette.length]; }

function cards(container, items) {
  container.replaceChildren(...items.map(([field, label, value]) =>
    el("div", { class: "card" }, el("div", { class: "label" }, label),
       el("div", { class: "value", "data-field": field }, value))));
}

function table(container, columns, rows, rowAttrs = () => ({})) {
  const head = el("tr", {}, ...columns.map(([, label, text]) => el("th", { class: text ? "text" : "" }, label)));
  const body = rows.map((row) => el("tr", rowAttrs(row), ...columns.map(([field, , text, format]) =>
    el("td", { class: text ? "text" : "", "data-field": field }, format ? format(row[field], row) : row[field]))));
  container.replaceChildren(el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
}

function chart(id, holder, config) {
  if (!charts[id]) {
    const canvas = el("canvas", { id });
    holder.append(canvas);
    charts[id] = new Chart(canvas, config);
  } else {
    charts[id].data = config.data;
    if (config.options && config.options.scales) charts[id].options.scales = config.options.scales;
    charts[id].update("none");
  }
  return charts[id];
}

// ---- status -------------------------------------------------------------------------------------
async function renderStatus() {
  const s = await getJson("/api/status.json");
  const top = section("status-cards", (n) => n.append(el("div", { class: "cards" })));
  cards(top.firstChild, [
    ["workers", "workers", s.workers],
    ["retiring_workers", "retiring", s.retiring_workers],
    ["clients", "clients", s.clients],
    ["tasks_pending", "tasks pending", integer(s.tasks_pending)],
    ["tasks_done", "tasks done", integer(s.tasks_done)],
    ["tasks_erred", "tasks erred", integer(s.tasks_erred)],
    ["tasks_cancelled", "tasks cancelled", integer(s.tasks_cancelled)],
    ["tasks_per_second", "tasks/s (last 10 s)", integer(Math.round(s.tasks_per_second))],
    // A stream's parameter sets are work too: counted apart from tasks.
    ["sets_done", "sets run", integer(s.sets_done)],
    ["sets_per_second", "sets/s (last 10 s)", integer(Math.round(s.sets_per_second))],
    ["streams_running", "streams running", integer(s.streams_running)],
    ["results_held", "results held", integer(s.results_held)],
    ["workers_lost", "workers lost", s.workers_lost],
  ]);
  const rate = section("status-rate", (n) => n.append(el("h3", {}, "Work per second, last 60 s"),
                                                      el("div", { class: "chart medium" })));
  const series = s.tasks_per_second_series;
  chart("rate-chart", rate.querySelector(".chart"), {
    type: "line",
    data: { labels: series.map((_, i) => i - series.length), datasets: [
      { label: "tasks/s", data: series, borderColor: colour(0), backgroundColor: colour(0), pointRadius: 0 },
      { label: "parameter sets/s", data: s.sets_per_second_series, borderColor: colour(2),
        backgroundColor: colour(2), pointRadius: 0 }] },
    options: { maintainAspectRatio: false,
               plugins: { title: { display: true, text: "Tasks and parameter sets finished per second" } },
               scales: { x: { title: { display: true, text: "seconds ago" } },
                         y: { beginAtZero: true, title: { display: true, text: "per second" } } } },
  });
  const memoryOf = new Map(s.memory.map((m) => [m.worker, m]));
  const workers = s.worker_list.map((w) => Object.assign({}, w, { mem: memoryOf.get(w.id) || w.memory }));
  const list = section("status-workers", (n) => n.append(el("h3", {}, "Workers"), el("div", { class: "table" })));
  table(list.querySelector(".table"), [
    ["id", "id"], ["name", "name", true], ["threads", "threads"], ["tasks", "tasks", false, integer],
    ["sets", "sets run", false, integer],
    ["memory_limit", "limit", false, (v) => v ? mib(v) : "none"],
    ["managed_bytes", "managed in memory", false, (_, r) => mib(r.mem.managed_bytes)],
    ["spilled_bytes", "spilled", false, (_, r) => mib(r.mem.spilled_bytes)],
    // The process's resident memory as the system counts it; workers of one process share it.
    ["process_rss", "process resident", false, (_, r) => mib(r.mem.process_rss) +
      (r.mem.process_workers > 1 ? ` (shared by ${r.mem.process_workers} workers)` : "")],
    ["spills", "spills", false, (_, r) => integer(r.mem.spills)],
    ["paused", "paused", true, (_, r) => r.mem.paused ? "PAUSED" : ""],
    ["retiring", "retiring", true, (v) => v ? "retiring" : ""],
  ], workers, (w) => ({ "data-worker-id": w.id }));
  const mem = section("status-memory", (n) => n.append(el("h3", {}, "Memory per worker"),
                                                       el("div", { class: "chart medium" })));
  chart("memory-chart", mem.querySelector(".chart"), {
    type: "bar",
    data: { labels: workers.map((w) => w.name), datasets: [
      { label: "managed in memory (MiB)", data: workers.map((w) => w.mem.managed_bytes / 1048576), backgroundColor: colour(0), stack: "held" },
      { label: "spilled (MiB)", data: workers.map((w) => w.mem.spilled_bytes / 1048576), backgroundColor: colour(4), stack: "held" },
      { label: "process resident (MiB)", data: workers.map((w) => w.mem.process_rss / 1048576), backgroundColor: colour(8), stack: "rss" },
      // The limit as a mark across each worker's bars, not a bar of its own that dwarfs them.
      { type: "line", label: "limit (MiB)", data: workers.map((w) => w.memory_limit ? w.memory_limit / 1048576 : null),
        borderColor: colour(1), backgroundColor: colour(1), showLine: false, pointStyle: "line", pointRadius: 24,
        pointBorderWidth: 3 },
    ] },
    options: { maintainAspectRatio: false, plugins: { title: { display: true, text: "Worker memory against its limit" } },
               scales: { x: { title: { display: true, text: "worker" } },
                         y: { beginAtZero: true, title: { display: true, text: "MiB" } } } },
  });
  return s;
}

// ---- task stream ----------------------------------------------------------------------------------
async function renderTasks() {
  const t = await getJson("/api/task-stream.json?window=10");
  const top = section("task-cards", (n) => n.append(el("div", { class: "cards" })));
  cards(top.firstChild, [
    ["run_count", "jobs in the last 10 s", integer(t.run_count)],
    ["tasks_per_second", "tasks/s (last 10 s)", integer(Math.round(t.tasks_per_second))],
    ["sets_per_second", "sets/s (last 10 s)", integer(Math.round(t.sets_per_second))],
    ["shown", "rectangles drawn", integer(t.runs.length)],
    ["aggregated", "aggregated", t.aggregated ? "yes" : "no"],
  ]);
  const holder = section("task-chart", (n) => n.append(el("div", { class: "chart tall" }),
    el("p", { class: "note" }, "Each rectangle is one job on one of a worker's compute threads: a run of " +
      "tasks of one function, or of a stream's parameter sets through its simulation; with many, runs of " +
      "one function on one worker are drawn per time bin.")));
  // One lane per compute thread of each worker (runs that overlap in time go to different lanes), so that
  // jobs on one worker never merge into one solid bar.
  const laneName = (worker, lane) => "worker " + worker + " · thread " + (lane + 1);
  const lanes = [];
  for (const [worker, count] of t.lanes) for (let lane = 0; lane < count; ++lane) lanes.push(laneName(worker, lane));
  const byFunction = new Map();
  for (const [worker, fn, start, end, tasks, failed, lane, kind] of t.runs) {
    if (!byFunction.has(fn)) byFunction.set(fn, { kind, data: [] });
    byFunction.get(fn).data.push({ x: [start - t.now, end - t.now], y: laneName(worker, lane), tasks });
  }
  const datasets = [...byFunction.entries()].map(([fn, { kind, data }]) => ({
    label: t.functions[fn] + (kind === 1 ? " (parameter sets)" : ""), data,
    // A job of a few milliseconds is under a pixel wide in a 10 s window: drawn at least 2 px.
    backgroundColor: runPalette[fn % runPalette.length], borderWidth: 0, minBarLength: 2,
    borderSkipped: false, barPercentage: 0.9, categoryPercentage: 1.0 }));
  chart("stream-chart", holder.querySelector(".chart"), {
    type: "bar",
    data: { labels: lanes, datasets },
    options: { indexAxis: "y", maintainAspectRatio: false, grouped: false,
               plugins: { title: { display: true, text: "Task stream (tasks and simulation jobs), last 10 s" } },
               scales: { x: { min: -t.window, max: 0, title: { display: true, text: "seconds before now" } },
                         y: { stacked: true, title: { display: true, text: "worker · compute thread" } } } },
  });
  holder.dataset.lanes = JSON.stringify(lanes);  // what a reader (or a test) sees on the y axis
  return t;
}

// ---- progress -------------------------------------------------------------------------------------
async function renderProgress() {
  const p = await getJson("/api/progress.json");
  const top = section("progress-cards", (n) => n.append(el("div", { class: "cards" })));
  cards(top.firstChild, [
    ["total_tasks", "tasks", integer(p.total.tasks)], ["total_done", "done", integer(p.total.done)],
    ["total_processing", "processing", integer(p.total.processing)],
    ["total_waiting", "waiting", integer(p.total.waiting)], ["total_erred", "erred", integer(p.total.erred)],
    ["total_cancelled", "cancelled", integer(p.total.cancelled)],
  ]);
  const holder = section("progress-chart", (n) => n.append(el("div", { class: "chart medium" })));
  const states = [["done", 2], ["processing", 0], ["waiting", 8], ["erred", 1], ["cancelled", 6]];
  chart("progress-bars", holder.querySelector(".chart"), {
    type: "bar",
    data: { labels: p.functions.map((f) => f.function),
            datasets: states.map(([state, c]) => ({ label: state, data: p.functions.map((f) => f[state]),
                                                    backgroundColor: colour(c) })) },
    options: { indexAxis: "y", maintainAspectRatio: false,
               plugins: { title: { display: true, text: "Tasks of each function by state" } },
               scales: { x: { stacked: true, title: { display: true, text: "tasks" } },
                         y: { stacked: true, title: { display: true, text: "function" } } } },
  });
  const list = section("progress-table", (n) => n.append(el("div", { class: "table" })));
  table(list.firstChild, [
    ["function", "function", true], ["operations", "operations"], ["tasks", "tasks", false, integer],
    ["done", "done", false, integer], ["processing", "processing", false, integer],
    ["waiting", "waiting", false, integer], ["erred", "erred", false, integer],
    ["cancelled", "cancelled", false, integer],
  ], p.functions, (f) => ({ "data-function": f.function }));
  // Streams are work in progress too: each running one, its sets stored of those accepted (and of its
  // input, when its client said how many).
  const streams = section("progress-streams", (n) => n.append(el("h3", {}, "Streams running"),
                                                             el("div", { class: "table" })));
  table(streams.querySelector(".table"), [
    ["id", "stream"], ["simulation", "simulation", true], ["accepted", "accepted", false, integer],
    ["stored", "stored", false, integer], ["failed", "failed", false, integer],
    ["input_sets", "of input", false, (v) => (v ? integer(v) : "")],
    ["done", "done", false, (_, r) => r.input_sets ? (100 * r.stored / r.input_sets).toFixed(1) + "%" : ""],
    ["sets_per_second", "sets/s", false, (v) => v.toFixed(1)],
  ], p.streams, (x) => ({ "data-stream-id": x.id }));
  return p;
}

// ---- streams --------------------------------------------------------------------------------------
async function renderStreams() {
  const s = await getJson("/api/streams.json");
  const top = section("stream-cards", (n) => n.append(el("div", { class: "cards" })));
  const open = s.streams.filter((x) => !x.finished);
  cards(top.firstChild, [
    ["streams_open", "streams running", open.length],
    ["stored_results", "results stored", integer(s.stored_results)],
    ["in_flight", "sets in flight", integer(open.reduce((a, x) => a + x.in_flight, 0))],
    ["sets_per_second", "sets/s", integer(Math.round(open.reduce((a, x) => a + x.sets_per_second, 0)))],
  ]);
  const rows = s.streams.map((x) => Object.assign({}, x, {
    p50: x.latency_seconds.p50, p90: x.latency_seconds.p90, p99: x.latency_seconds.p99,
    run_p50: x.run_seconds.p50, run_p99: x.run_seconds.p99,
    // Closed before its input ended (Ctrl-C, a lost client): incomplete, never "finished".
    state: x.ended_early ? "incomplete" : x.finished ? (x.error ? "failed" : "finished")
                                                     : (x.closed ? "closing" : "running"),
    input: x.input_sets || null,
    note: x.error || (x.ended_early ? x.ended_early + (x.input_sets ? " (accepted " + integer(x.accepted) +
                                                       " of " + integer(x.input_sets) + ")" : "") : "") }));
  const list = section("stream-table", (n) => n.append(el("div", { class: "table" })));
  table(list.firstChild, [
    ["id", "stream"], ["simulation", "simulation", true], ["generator", "generator", true],
    ["state", "state", true], ["accepted", "accepted", false, integer],
    ["input", "of input", false, (v) => (v === null ? "" : integer(v))], ["stored", "stored", false, integer],
    ["failed", "failed", false, integer], ["in_flight", "in flight", false, integer],
    ["sets_per_second", "sets/s", false, (v) => v.toFixed(1)],
    // A set's own run, apart from the time from its push to its stored result (queueing included).
    ["run_p50", "run p50", false, seconds], ["run_p99", "run p99", false, seconds],
    ["p50", "push to store p50", false, seconds], ["p90", "p90", false, seconds], ["p99", "p99", false, seconds],
    ["note", "note", true],
  ], rows, (x) => ({ "data-stream-id": x.id, "data-state": x.state }));
  // Each stream's sets stored per second over its last s.history_seconds, kept by the node, finished
  // streams too (whenever this page was opened).
  const holder = section("stream-chart", (n) => n.append(el("div", { class: "chart medium" })));
  const shownStreams = s.streams.slice(0, 12);
  chart("stream-rates", holder.querySelector(".chart"), {
    type: "line",
    data: { labels: Array.from({ length: s.history_seconds }, (_, i) => i - s.history_seconds + 1),
            datasets: shownStreams.map((x, i) => ({
              label: "stream " + x.id, data: x.rate_history.map((v) => (v === null ? null : v)),
              borderColor: runPalette[i % runPalette.length], backgroundColor: runPalette[i % runPalette.length],
              pointRadius: 0 })) },
    options: { maintainAspectRatio: false, plugins: { title: { display: true, text: "Sets stored per second" } },
               scales: { x: { title: { display: true, text: "seconds before now (a finished stream: before its end)" } },
                         y: { beginAtZero: true, title: { display: true, text: "sets/s" } } } },
  });
  return s;
}

// ---- GLM fits -------------------------------------------------------------------------------------
async function renderGlm() {
  const g = await getJson("/api/glm.json");
  const list = section("glm-table", (n) => n.append(el("div", { class: "table" })));
  const rows = g.fits.map((f) => Object.assign({}, f, {
    state: f.running ? "running" : (f.error ? "failed" : (f.converged ? "converged" : "stopped")) }));
  table(list.firstChild, [
    ["session", "fit"], ["solver", "solver", true], ["family", "family", true], ["state", "state", true],
    ["partitions", "partitions"], ["rounds", "rounds"], ["iterations", "iterations"],
    ["loss", "latest loss", false, (v) => v === null ? "–" : v.toPrecision(8)],
    ["objective", "objective", false, (v, r) => r.running || v === null ? "–" : v.toPrecision(8)],
    ["seconds", "time", false, seconds], ["error", "error", true],
  ], rows, (f) => ({ "data-session": f.session }));
  const holder = section("glm-chart", (n) => n.append(el("div", { class: "chart medium" })));
  const shown = g.fits.slice(0, 6);
  const longest = Math.max(0, ...shown.map((f) => f.losses.length));
  chart("glm-losses", holder.querySelector(".chart"), {
    type: "line",
    data: { labels: Array.from({ length: longest }, (_, i) => i + 1),
            datasets: shown.map((f, i) => ({ label: "fit " + f.session + " (" + f.solver + ")", data: f.losses,
                                             borderColor: colour(i), backgroundColor: colour(i), pointRadius: 1 })) },
    options: { maintainAspectRatio: false, plugins: { title: { display: true, text: "Loss per round over the data" } },
               scales: { x: { title: { display: true, text: "round" } },
                         y: { type: "logarithmic", title: { display: true, text: "loss (sum over rows)" } } } },
  });
  return g;
}

const renderers = { status: renderStatus, tasks: renderTasks, progress: renderProgress, streams: renderStreams,
                    glm: renderGlm };

async function poll() {
  const freshness = document.getElementById("freshness");
  try {
    const data = await renderers[page]();
    const age = data.age_seconds;
    freshness.textContent = "updated " + new Date().toLocaleTimeString("en-GB") +
      (age !== undefined && age !== null ? " · figures " + age.toFixed(1) + " s old" : "");
    freshness.classList.toggle("stale", Boolean(data.error) || (age !== undefined && age > 5));
    if (data.error) freshness.textContent += " · " + data.error;
    document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
    document.body.dataset.ready = "1";
  } catch (error) {
    freshness.textContent = "cannot reach the node: " + error.message;
    freshness.classList.add("stale");
    document.body.dataset.error = error.message;
  }
  setTimeout(poll, POLL_MS);
}

if (renderers[page]) poll();
