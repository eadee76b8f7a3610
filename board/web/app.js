// The board's screen on a phone (issue 17): pairing, the mirrored session, the rides.
// Plain JavaScript, no library, nothing fetched from anywhere but the board.
"use strict";

const $ = (id) => document.getElementById(id);
const sections = ["pairing", "live", "rides", "ride"];
let live = null;          // the EventSource of /api/live
let lastEventAt = 0;      // performance.now() of the last status received
let lastStatus = null;
let stopArmedUntil = 0;

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
    route();
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
  if (status.gps && !["fix", "none"].includes(status.gps)) faults.push("GPS: " + status.gps + (status.gpsDetail ? " (" + status.gpsDetail + ")" : ""));
  for (const [device, condition] of Object.entries(status.devices || {})) {
    if (/fail|lost|missing|error/i.test(condition)) faults.push(device + ": " + condition);
  }
  $("faults").hidden = faults.length === 0;
  $("faults").textContent = faults.join(" · ");
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

// MARK: routes

async function start() {
  const r = await api("/api/status");
  if (r.status === 401) {
    if (live) { live.close(); live = null; }
    show("pairing");
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
