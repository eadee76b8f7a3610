// The board's screen on a phone (issue 17): pairing, the mirrored session, the rides.
// Plain JavaScript, no library, nothing fetched from anywhere but the board.
"use strict";

const $ = (id) => document.getElementById(id);
const sections = ["pairing", "live", "rides", "ride"];
let live = null;          // the EventSource of /api/live
let lastEventAt = 0;      // performance.now() of the last status received
let lastStatus = null;
let stopArmedUntil = 0;
let incidentDeadline = null; // performance.now() at which the incident countdown runs out

function show(name) {
  for (const s of sections) $(s).hidden = s !== name;
}

function fmtTimer(seconds) {
  const s = Math.max(0, Math.floor(seconds || 0));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return (h > 0 ? h + ":" + String(m).padStart(2, "0") : String(m)) + ":" + String(r).padStart(2, "0");
}
const fmt = (value, digits) => (value === null || value === undefined || Number.isNaN(value)) ? "–" : Number(value).toFixed(digits);

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  return { status: response.status, body };
}

// MARK: pairing

async function pair(code) {
  $("pair-message").textContent = "pairing…";
  const r = await api("/api/pair", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ code, name: navigator.userAgent.slice(0, 120) }),
  });
  if (r.status === 200) {
    $("pair-message").textContent = "paired";
    // The code came in the fragment: drop it from the address bar and history.
    history.replaceState(null, "", location.pathname + "#/live");
    start();
  } else {
    $("pair-message").textContent = (r.body && r.body.error) || ("refused (" + r.status + ")");
  }
}

$("pair-form").addEventListener("submit", (event) => {
  event.preventDefault();
  pair($("pair-code").value.trim());
});

// MARK: the live view

function zoneOf(status, quantity) {
  const z = (status.zones || []).find((g) => g.quantity === quantity);
  return z && z.zone ? z.zone : null;
}

function render(status) {
  lastStatus = status;
  const state = status.state || "notStarted";
  const badge = $("state");
  badge.textContent = state === "notStarted" ? "ready" : (status.pausedBySystem && state === "paused" ? "auto-paused" : state);
  badge.className = "state " + state;
  const p = status.lastPoint || {};
  $("f-timer").textContent = fmtTimer(status.timer);
  $("f-distance").textContent = fmt((status.distance || 0) / 1000, 2);
  $("f-speed").textContent = fmt(status.speed === undefined ? null : status.speed * 3.6, 1);
  $("f-avgspeed").textContent = fmt(status.averageSpeed === undefined ? null : status.averageSpeed * 3.6, 1);
  $("f-hr").textContent = status.heartRate === undefined ? "–" : String(status.heartRate);
  $("f-power").textContent = p.power === undefined ? "–" : String(p.power);
  $("f-cadence").textContent = p.cadence === undefined ? "–" : fmt(p.cadence, 0);
  $("f-ascent").textContent = fmt(status.ascent, 0);
  $("f-lap").textContent = status.lap === undefined ? "–" : String(status.lap);
  for (const [id, quantity] of [["f-hrzone", "heartRate"], ["f-pzone", "cyclingPower"]]) {
    const zone = zoneOf(status, quantity);
    $(id).textContent = zone ? "Z" + zone : "";
    $(id).className = "zone" + (zone ? " z" + zone : "");
  }
  // Faults: GPS, sensors, storage — what the LED shows, in words.
  const faults = [];
  if (status.storage && status.storage.failing) faults.push("storage: " + (status.storage.lastError || "failing"));
  const damaged = unreadableText(status.unreadable);
  if (damaged) faults.push("damaged record: " + damaged + " unreadable at resume, left out of the ride");
  if (status.gps && !["fix", "none"].includes(status.gps)) faults.push("GPS: " + status.gps + (status.gpsDetail ? " (" + status.gpsDetail + ")" : ""));
  for (const [device, condition] of Object.entries(status.devices || {})) {
    if (/fail|lost|missing|error/i.test(condition)) faults.push(device + ": " + condition);
  }
  $("faults").hidden = faults.length === 0;
  $("faults").textContent = faults.join(" · ");
  renderBattery(status.battery);
  renderIncident(status.incident);
  renderUploads(status.uploads);
  const outside = (status.targetZones || []).filter((t) => t.outside);
  $("target").hidden = outside.length === 0;
  $("target").textContent = outside.map((t) => "outside the target zones " + t.lower + "–" + t.upper).join(" · ");
  // The controls this state takes, as the buttons do.
  const takes = {
    notStarted: ["start"], prepared: ["start"], running: ["pause", "lap", "stop"],
    paused: ["resume", "lap", "stop"], stopped: [], ended: ["start"],
  }[state] || [];
  for (const command of ["start", "pause", "resume", "lap", "stop"]) {
    const button = $("c-" + command);
    button.disabled = !takes.includes(command);
    button.hidden = (command === "pause" && state === "paused") || (command === "resume" && state !== "paused");
  }
}

/// The upload queue, when it holds rides still to send or given up on (the last one's reason).
function renderUploads(uploads) {
  const line = $("uploads");
  line.hidden = !uploads;
  if (!uploads) return;
  const parts = [];
  if (uploads.pending) parts.push(uploads.pending + " to send");
  if (uploads.failed) {
    const last = uploads.lastFailure;
    parts.push(uploads.failed + " failed" + (last ? " (ride " + last.sessionID + " to " + last.target + ": " + (last.reason || "no reason kept") + ")" : ""));
  }
  line.textContent = "Uploads: " + parts.join(", ");
  line.className = "message" + (uploads.failed ? " failed" : "");
}

/// The board's battery: its level and time left, and a banner while low or critical
/// ("no battery information" on a board without a gauge).
function renderBattery(battery) {
  const banner = $("battery-banner");
  if (!battery) {
    $("f-battery").textContent = "–";
    $("f-battery-left").textContent = "no battery information";
    banner.hidden = true;
    return;
  }
  $("f-battery").textContent = battery.level === undefined ? "–" : fmt(battery.level, 0) + " %";
  const left = battery.timeLeft === undefined ? "" : fmtTimer(battery.timeLeft) + " left";
  $("f-battery-left").textContent = battery.onCharger ? "charging" : left;
  banner.hidden = battery.alert === "normal" || battery.alert === undefined;
  banner.className = "battery-banner " + (battery.alert || "");
  if (battery.alert === "critical") {
    banner.textContent = battery.countdownRemaining === undefined
      ? "Battery critical: plug in a charger"
      : "Battery critical: the ride is saved and ended in " + Math.ceil(battery.countdownRemaining) + " s unless a charger is plugged in";
  } else if (battery.alert === "low") {
    banner.textContent = "Battery low" + (left ? ": " + left : "");
  }
}

/// The incident alarm (a fall while riding): a full-screen alert with the impact, the
/// countdown (counted down here between updates) or "confirmed", and "I'm fine".
function renderIncident(incident) {
  const alert = $("incident");
  if (!incident) {
    if (!alert.hidden) $("incident-message").textContent = "";
    alert.hidden = true;
    incidentDeadline = null;
    return;
  }
  const confirmed = incident.phase === "confirmed";
  $("incident-title").textContent = confirmed ? "Incident confirmed" : "Fall detected";
  $("incident-impact").textContent = "impact " + fmt(incident.impact, 1) + " g" +
    (incident.tilt === undefined ? "" : " · turned " + fmt(incident.tilt, 0) + "°");
  incidentDeadline = confirmed || incident.remaining === undefined ? null : performance.now() + incident.remaining * 1000;
  alert.hidden = false;
  incidentCountdown();
}

function incidentCountdown() {
  if ($("incident").hidden) return;
  $("incident-countdown").textContent = incidentDeadline === null ? ""
    : Math.ceil(Math.max(0, (incidentDeadline - performance.now()) / 1000)) + " s";
}
setInterval(incidentCountdown, 250);

$("incident-fine").addEventListener("click", async () => {
  $("incident-message").textContent = "telling the board…";
  const r = await api("/api/control", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ command: "fine" }),
  });
  // The alert goes when the status no longer has the incident.
  $("incident-message").textContent = r.status === 200 ? "the alarm stops"
    : ((r.body && (r.body.message || r.body.error)) || ("refused (" + r.status + ")"));
});

function freshness() {
  const link = $("link");
  if (!lastEventAt) { link.textContent = "connecting"; link.className = "link stale"; return; }
  const age = (performance.now() - lastEventAt) / 1000;
  if (age < 3) { link.textContent = "live"; link.className = "link"; }
  else { link.textContent = "no link: figures " + Math.round(age) + " s old"; link.className = "link stale"; }
}
setInterval(freshness, 1000);

function connect() {
  if (live) return;
  live = new EventSource("/api/live");
  live.addEventListener("status", (event) => {
    lastEventAt = performance.now();
    render(JSON.parse(event.data));
    freshness();
  });
  live.onerror = () => {
    freshness();
    if (live.readyState === EventSource.CLOSED) {
      // Refused (a revoked phone) or the board went away: ask again in 2 s.
      live = null;
      setTimeout(start, 2000);
    }
  };
}

for (const button of document.querySelectorAll("button[data-command]")) {
  button.addEventListener("click", async () => {
    const command = button.dataset.command;
    if (command === "stop" && performance.now() > stopArmedUntil) {
      // Stopping ends the workout: a second tap within 4 s confirms it.
      stopArmedUntil = performance.now() + 4000;
      button.textContent = "Tap again to stop";
      button.classList.add("confirm");
      setTimeout(() => { button.textContent = "Stop"; button.classList.remove("confirm"); }, 4000);
      return;
    }
    stopArmedUntil = 0;
    button.textContent = command === "stop" ? "Stop" : button.textContent;
    button.classList.remove("confirm");
    $("control-message").textContent = command + "…";
    const r = await api("/api/control", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ command }),
    });
    $("control-message").textContent = r.status === 200 ? "" : ((r.body && (r.body.message || r.body.error)) || ("refused (" + r.status + ")"));
  });
}

// MARK: notes from the phone: a drink, a note; after the ride, RPE and mood

async function annotate(fields, messageId) {
  const r = await api("/api/annotate", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(fields),
  });
  $(messageId).textContent = r.status === 200 ? (r.body && r.body.message) || "noted"
    : ((r.body && (r.body.message || r.body.error)) || ("not saved (" + r.status + ")"));
  return r.status === 200;
}

$("a-drink").addEventListener("click", () => annotate({ kind: "drink", amount: Number($("drink-amount").value) }, "note-message"));
$("a-note").addEventListener("click", async () => {
  if (await annotate({ kind: "note", text: $("note-text").value }, "note-message")) $("note-text").value = "";
});

// MARK: routes

async function start() {
  const r = await api("/api/status");
  if (r.status === 401) {
    if (live) { live.close(); live = null; }
    show("pairing");
    $("plain-warning").hidden = location.protocol !== "http:";
    $("state").textContent = "not paired";
    const match = location.hash.match(/pair=([0-9A-Za-z-]+)/);
    if (match) { $("pair-code").value = match[1]; pair(match[1]); }
    return;
  }
  if (r.status === 200) render(r.body);
  connect();
  route();
}

function route() {
  // A pairing URL opened while the page is already open (only the fragment changed).
  const pairing = location.hash.match(/pair=([0-9A-Za-z-]+)/);
  if (pairing) { $("pair-code").value = pairing[1]; pair(pairing[1]); return; }
  if ($("pairing").hidden === false && !live) return;
  const hash = location.hash || "#/live";
  const ride = hash.match(/^#\/rides\/(\d+)/);
  if (ride) { show("ride"); if (window.loadRide) window.loadRide(Number(ride[1])); }
  else if (hash.startsWith("#/rides")) { show("rides"); if (window.loadRides) window.loadRides(); }
  else show("live");
  if (!live) connect();
}
window.addEventListener("hashchange", route);
start();

// MARK: the rides

const SVG = "http://www.w3.org/2000/svg";
const zoneColours = ["#9e9e9e", "#2196f3", "#4caf50", "#ff9800", "#f44336", "#b71c1c", "#880e4f", "#4a148c", "#1a237e"];

function el(tag, attributes, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attributes || {})) node.setAttribute(k, v);
  return node;
}

function fmtDate(wall) {
  return wall ? new Date(wall * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC" : "–";
}

window.loadRides = async function () {
  const list = $("ride-list");
  const r = await api("/api/sessions");
  if (r.status !== 200) { list.textContent = (r.body && r.body.error) || "cannot list the rides"; return; }
  list.replaceChildren();
  for (const s of r.body) {
    const item = el("li");
    const link = el("a", { href: "#/rides/" + s.id }, "Ride " + s.id + " · " + s.activity);
    item.append(link, el("div", {}, fmtDate(s.start) + " · " + fmt(s.distance / 1000, 2) + " km · " +
      fmtTimer(s.timer) + " · " + s.state));
    list.append(item);
  }
  if (!r.body.length) list.append(el("li", {}, "no rides yet"));
};

/// A line chart of `ys` against `xs`, with optional horizontal bands (zones) behind it.
function lineChart(title, xs, ys, options) {
  options = options || {};
  const width = 600, height = 160, pad = 28;
  const points = xs.map((x, i) => [x, ys[i]]).filter((p) => p[1] !== null && p[1] !== undefined);
  const box = el("div", { class: "chart-box" });
  box.append(el("h3", {}, title));
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": title });
  if (points.length < 2) {
    const text = svg("text", { x: 10, y: 30 }); text.textContent = "no data"; chart.append(text);
    box.append(chart);
    return box;
  }
  const x0 = Math.min(...points.map((p) => p[0])), x1 = Math.max(...points.map((p) => p[0]));
  let y0 = Math.min(...points.map((p) => p[1])), y1 = Math.max(...points.map((p) => p[1]));
  if (options.bands) { y0 = Math.min(y0, options.bands[0][0]); y1 = Math.max(y1, options.bands[options.bands.length - 1][0]); }
  if (y1 === y0) y1 = y0 + 1;
  const sx = (x) => pad + (x - x0) / (x1 - x0 || 1) * (width - 2 * pad);
  const sy = (y) => height - pad / 2 - (y - y0) / (y1 - y0) * (height - pad);
  for (const [index, band] of (options.bands || []).entries()) {
    const top = index + 1 < options.bands.length ? options.bands[index + 1][0] : y1;
    const from = Math.max(band[0], y0), to = Math.min(top, y1);
    if (to <= from) continue;
    chart.append(svg("rect", { x: pad, y: sy(to), width: width - 2 * pad, height: sy(from) - sy(to),
      fill: zoneColours[index % zoneColours.length], opacity: 0.25 }));
  }
  chart.append(svg("polyline", { points: points.map((p) => sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1)).join(" "),
    fill: "none", stroke: "#000", "stroke-width": 2 }));
  for (const [y, anchor] of [[y0, "end"], [y1, "end"]]) {
    const label = svg("text", { x: pad - 3, y: sy(y) + 4, "text-anchor": anchor, "font-size": 11 });
    label.textContent = options.digits ? y.toFixed(options.digits) : Math.round(y);
    chart.append(label);
  }
  box.append(chart);
  return box;
}

/// The road's roughness as a colour: green smooth to red rough, `t` from 0 to 1.
const roughColour = (t) => "hsl(" + Math.round(120 * (1 - Math.min(1, Math.max(0, t)))) + ",90%,38%)";

/// The roughness that is the track's reddest: the ride's 95th percentile (a pothole's second
/// would leave the rest of the ride green); null without an inertial sensor.
function roughTop(vibration) {
  const felt = (vibration || []).filter((v) => v !== null && v !== undefined).sort((a, b) => a - b);
  return felt.length ? felt[Math.min(felt.length - 1, Math.floor(felt.length * 0.95))] || 1 : null;
}

function trackChart(samples) {
  const box = el("div", { class: "chart-box" });
  const vibration = samples.vibration || [];
  const top = roughTop(vibration);
  box.append(el("h3", {}, top === null ? "Track" : "Track, by the road's roughness (green smooth, red " + fmt(top, 1) + " m/s² and over)"));
  const pts = samples.latitude.map((lat, i) => [lat, samples.longitude[i], vibration[i]]).filter((p) => p[0] !== null && p[1] !== null);
  const size = 300;
  const chart = svg("svg", { viewBox: `0 0 ${size} ${size}`, class: "chart", role: "img", "aria-label": "Track" });
  if (pts.length >= 2) {
    const midLat = pts.reduce((a, p) => a + p[0], 0) / pts.length;
    const k = Math.cos(midLat * Math.PI / 180);   // equirectangular: a degree east is cos(lat) of one north
    const xs = pts.map((p) => p[1] * k), ys = pts.map((p) => p[0]);
    const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
    const span = Math.max(x1 - x0, y1 - y0) || 1e-6;
    // One scale for both axes (the shape kept), the track centred in the square.
    const ox = (span - (x1 - x0)) / 2, oy = (span - (y1 - y0)) / 2;
    const sx = (x) => 10 + (x - x0 + ox) / span * (size - 20), sy = (y) => size - 10 - (y - y0 + oy) / span * (size - 20);
    chart.append(svg("polyline", { points: pts.map((p, i) => sx(xs[i]).toFixed(1) + "," + sy(ys[i]).toFixed(1)).join(" "),
      fill: "none", stroke: "#000", "stroke-width": 2 }));
    // Over the black line, each stretch the sensor felt in its roughness's colour.
    if (top !== null) {
      for (let i = 1; i < pts.length; i++) {
        const v = pts[i][2];
        if (v === null || v === undefined) continue;
        chart.append(svg("line", { x1: sx(xs[i - 1]).toFixed(1), y1: sy(ys[i - 1]).toFixed(1), x2: sx(xs[i]).toFixed(1),
          y2: sy(ys[i]).toFixed(1), stroke: roughColour(v / top), "stroke-width": 4, "stroke-linecap": "round", class: "rough" }));
      }
    }
    chart.append(svg("circle", { cx: sx(xs[0]), cy: sy(ys[0]), r: 5, fill: "#0a0" }));
    chart.append(svg("circle", { cx: sx(xs[xs.length - 1]), cy: sy(ys[ys.length - 1]), r: 5, fill: "#c00" }));
  } else {
    const text = svg("text", { x: 10, y: 30 }); text.textContent = "no positions"; chart.append(text);
  }
  box.append(chart);
  return box;
}

/// Bars of seconds per zone; with laps, one stacked bar per lap.
function zoneChart(zone) {
  const box = el("div", { class: "chart-box" });
  box.append(el("h3", {}, "Time in zone: " + (zone.quantity === "heartRate" ? "heart rate" : "power") + " (" + zone.zones + ")"));
  const rows = [["all", zone.seconds]].concat(zone.laps.length > 1 ? zone.laps.map((l, i) => ["lap " + (i + 1), l]) : []);
  const width = 600, rowHeight = 22, height = rows.length * rowHeight + 10;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": "Time in zone" });
  rows.forEach(([label, seconds], row) => {
    const total = seconds.reduce((a, b) => a + b, 0) || 1;
    const text = svg("text", { x: 2, y: row * rowHeight + 18, "font-size": 12 }); text.textContent = label; chart.append(text);
    let x = 60;
    seconds.forEach((s, i) => {
      const w = s / total * (width - 70);
      if (w > 0) chart.append(svg("rect", { x, y: row * rowHeight + 5, width: w, height: rowHeight - 6, fill: zoneColours[i % zoneColours.length] }));
      x += w;
    });
  });
  box.append(chart);
  const table = el("table");
  const head = el("tr"); head.append(el("th", {}, "zone"), ...zone.seconds.map((_, i) => el("th", {}, "Z" + (i + 1))));
  table.append(head);
  for (const [label, seconds] of rows) {
    const tr = el("tr"); tr.append(el("td", {}, label), ...seconds.map((s) => el("td", {}, fmtTimer(s)))); table.append(tr);
  }
  box.append(table);
  return box;
}

function zoneBands(zone) {
  // "0-120,120-140,140-160,160-175,175- bpm": each zone's lower bound.
  return zone.zones.replace(/[^0-9.,-]/g, "").split(",").map((r) => [Number(r.split("-")[0])]);
}

/// "2 points, 1 lap": a session's rows a damaged record made unreadable ("" for none).
function unreadableText(rows) {
  if (!rows) return "";
  return [["point", rows.points], ["event", rows.events], ["lap", rows.laps]]
    .filter(([, n]) => n > 0).map(([what, n]) => n + " " + what + (n === 1 ? "" : "s")).join(", ");
}

window.loadRide = async function (id) {
  const body = $("ride-body");
  body.replaceChildren(el("p", {}, "loading…"));
  const r = await api("/api/sessions/" + id);
  if (r.status !== 200) { body.replaceChildren(el("p", {}, (r.body && r.body.error) || "cannot load the ride")); return; }
  const ride = r.body, s = ride.session, samples = ride.samples;
  $("ride-title").textContent = "Ride " + s.id + " · " + s.activity;
  const summary = el("table");
  for (const [label, value] of [
    ["Start", fmtDate(s.start)], ["Distance", fmt(s.distance / 1000, 2) + " km"], ["Timer", fmtTimer(s.timer)],
    ["Elapsed", fmtTimer(s.elapsed)], ["Avg speed", fmt(s.averageSpeed && s.averageSpeed * 3.6, 1) + " km/h"],
    ["Ascent", fmt(s.ascent, 0) + " m"], ["Avg / max HR", fmt(s.averageHeartRate, 0) + " / " + fmt(s.maxHeartRate, 0)],
    ["Avg power / NP", fmt(ride.training.metrics.averagePower, 0) + " / " + fmt(ride.training.metrics.normalizedPower, 0) + " W"],
  ]) { const tr = el("tr"); tr.append(el("td", {}, label), el("td", {}, value)); summary.append(tr); }
  if (ride.battery) {
    const tr = el("tr");
    tr.append(el("td", {}, "Battery"), el("td", {}, ride.battery.summary));
    summary.append(tr);
  }
  // Rows a damaged record made unreadable are left out of everything here: the rider is told.
  const unreadable = unreadableText(ride.unreadable);
  if (unreadable) {
    const tr = el("tr", { class: "unreadable" });
    tr.append(el("td", {}, "Left out"), el("td", {}, unreadable + " unreadable (a damaged record)"));
    summary.append(tr);
  }
  const downloads = el("p", { class: "downloads" });
  for (const format of ride.formats) {
    downloads.append(el("a", { href: "/api/sessions/" + s.id + "/file." + format, "data-format": format, download: "" }, format.toUpperCase()));
  }
  const hrZone = ride.training.zones.find((z) => z.quantity === "heartRate");
  const powerZone = ride.training.zones.find((z) => z.quantity === "cyclingPower");
  const km = samples.distance.map((d) => d / 1000), minutes = samples.timer.map((t) => t / 60);
  const charts = [
    trackChart(samples),
    lineChart("Elevation m, by km", km, samples.altitude),
    lineChart("Speed km/h, by minute", minutes, samples.speed.map((v) => v === null ? null : v * 3.6)),
    lineChart("Heart rate bpm, by minute", minutes, samples.heartRate, { bands: hrZone ? zoneBands(hrZone) : null }),
    lineChart("Power W, by minute", minutes, samples.power, { bands: powerZone ? zoneBands(powerZone) : null }),
  ];
  // The road's roughness (RMS m/s² of the acceleration about its 1 s mean): only with an IMU.
  if (roughTop(samples.vibration) !== null) charts.push(lineChart("Road roughness m/s², by km", km, samples.vibration, { digits: 1 }));
  if (ride.battery) charts.push(lineChart("Battery %, by minute", ride.battery.minutes, ride.battery.level));
  const zones = el("div");
  zones.append(el("h2", {}, "Time in zone"));
  if (!ride.training.zones.length) zones.append(el("p", {}, "no zones were set for this ride"));
  for (const zone of ride.training.zones) zones.append(zoneChart(zone));
  const laps = el("table");
  const lh = el("tr"); lh.append(...["Lap", "Timer", "km", "Avg km/h", "Avg HR", "Avg W", "Trigger"].map((h) => el("th", {}, h)));
  laps.append(lh);
  for (const lap of ride.laps) {
    const tr = el("tr");
    tr.append(...[lap.number, fmtTimer(lap.timer), fmt(lap.distance / 1000, 2), fmt(lap.avgSpeed && lap.avgSpeed * 3.6, 1),
      fmt(lap.avgHr, 0), fmt(lap.avgPower, 0), lap.trigger].map((v) => el("td", {}, String(v))));
    laps.append(tr);
  }
  const events = el("ul");
  for (const event of ride.events) {
    const words = [new Date(event.wall * 1000).toISOString().slice(11, 19), event.kind];
    if (event.fromState) words.push(event.fromState + " → " + event.toState);
    if (event.cause) words.push("(" + event.cause + ")");
    if (event.detail) words.push(event.detail);
    events.append(el("li", {}, words.join(" ")));
  }
  // How hard it was, and how it felt: after the ride, as HealthKit asks.
  const rating = el("div", { class: "rating" });
  const rpe = el("select", { id: "r-rpe", "aria-label": "Perceived exertion" });
  rpe.append(el("option", { value: "" }, "effort (RPE)…"));
  for (let i = 1; i <= 10; i++) rpe.append(el("option", { value: String(i) }, String(i)));
  const mood = el("select", { id: "r-mood", "aria-label": "Mood" });
  mood.append(el("option", { value: "" }, "mood…"));
  for (const m of ["very unpleasant", "unpleasant", "slightly unpleasant", "neutral", "slightly pleasant", "pleasant", "very pleasant"]) {
    mood.append(el("option", { value: m }, m));
  }
  const save = el("button", { id: "r-save", type: "button" }, "Save");
  const said = el("p", { id: "r-message", class: "message", role: "status" });
  save.addEventListener("click", async () => {
    let ok = true;
    if (rpe.value) ok = await annotate({ kind: "rpe", value: Number(rpe.value), session: s.id }, "r-message") && ok;
    if (mood.value) ok = await annotate({ kind: "mood", mood: mood.value, session: s.id }, "r-message") && ok;
    if (ok) window.loadRide(s.id);
  });
  rating.append(el("h2", {}, "How was it?"), rpe, mood, save, said);
  body.replaceChildren(summary, downloads, rating, ...charts, zones, el("h2", {}, "Laps"), laps, el("h2", {}, "Events"), events);
};
