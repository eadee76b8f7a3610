#!/usr/bin/env python3
"""Turn a recorded activity (FIT, TCX or GPX) into a replay ride for workoutd's simulated board.

Dev-time tool (not run by the build; Tests/IntegrationTests/ReplayToolTests.swift runs it on
FIT files of other makers than Garmin): FIT needs `pip install fitdecode==0.11.0` (MIT); TCX and
GPX are read with Python's own XML parser. The output is what the sim board feeds through the
same seams as real devices:

    # header lines: source, licence, start time (UTC), device totals
    t,kind,lat,lon,alt,speed,hr,cadence,temperature,power
    0,press,start
    1,rec,43.713393,-79.3660663,75.2,5.888,161,71,21,
    ...

t is seconds since the ride's start (integer): the device's timer start, or its first record.
A `rec` row is one instant of the world as the device recorded it: position (deg), altitude
(m), speed (m/s), heart rate (bpm), cadence (rpm), temperature (degC), power (W, a power
meter's); an empty field is a channel the device had no value for. (Files made before the
power column, with the 9-column header, still replay: the sim board reads both.)
Devices that "smart record" leave seconds out while the rider moves on; the sim board fills
those in (ReplaySchedule). A `press` row is a rider's button press: from a FIT file the first
timer start (start) and the last timer stop (stop), whatever started or stopped the timer (the
rider's button, the device's auto start on movement as a COROS watch's, an SRM head unit's or
a trainer's signal), manual laps (lap), and a manual timer stop followed by a start (pause,
then resume); from TCX the first lap's start, each further lap's start (lap) and the end
(stop); from GPX the start and the end. A file with no usable timer start starts at its first
record, one with no stop (TCX and GPX have none) ends a second after its last: the tool says
so on stderr. Every activity is one session. The device's *auto* pauses are not presses:
while auto-paused the device wrote no records, and the rider stood still, so the sim board
fills those gaps with the last position at zero speed and lets workoutd's own auto-pause
decide.

Usage: make-replay.py ACTIVITY.{fit,tcx,gpx} OUT.csv "source/licence text"
"""
import datetime
import math
import sys
import xml.etree.ElementTree as ET

SEMICIRCLE_DEG = 180.0 / 2**31


def fmt(v, digits):
    if v is None:
        return ""
    return f"{v:.{digits}f}".rstrip("0").rstrip(".") if digits else str(int(round(v)))


# The FIT profile's timer events (event = timer): event_type start, or one of the stops; the
# trigger (timer_trigger, the data field's subfield for a timer event) is manual (the rider's
# button), auto (the device's auto start and pause) or fitness_equipment (a trainer's or a head
# unit's signal).
TIMER_STOPS = ("stop", "stop_all", "stop_disable", "stop_disable_all")


def read_fit(src):
    """Records, presses, start, device and the device's session totals of a FIT file."""
    import fitdecode

    records, timer, laps, session, file_id = [], [], [], None, None
    for frame in fitdecode.FitReader(src):
        if not isinstance(frame, fitdecode.FitDataMessage):
            continue
        f = {fl.name: fl.value for fl in frame.fields}
        if frame.name == "file_id":
            file_id = f
        elif frame.name == "event" and f.get("event") == "timer" and f.get("timestamp") is not None:
            if f.get("event_type") == "start":
                timer.append((f["timestamp"], "start", f.get("timer_trigger")))
            elif f.get("event_type") in TIMER_STOPS:
                timer.append((f["timestamp"], "stop", f.get("timer_trigger")))
        elif frame.name == "lap" and f.get("lap_trigger") == "manual" and f.get("event_type") == "stop":
            laps.append((f["timestamp"], "lap"))
        elif frame.name == "record" and f.get("timestamp") is not None:
            lat, lon = f.get("position_lat"), f.get("position_long")
            records.append({
                "timestamp": f["timestamp"],
                "lat": lat * SEMICIRCLE_DEG if lat is not None else None,
                "lon": lon * SEMICIRCLE_DEG if lon is not None else None,
                "alt": f.get("enhanced_altitude", f.get("altitude")),
                "speed": f.get("enhanced_speed", f.get("speed")),
                "hr": f.get("heart_rate"), "cadence": f.get("cadence"), "temperature": f.get("temperature"),
                "power": f.get("power"),
            })
        elif frame.name == "session":
            session = f
    if not records:
        sys.exit(f"make-replay.py: {src}: no records")
    presses = timer_presses(timer, records, src) + laps
    keys = ["sport", "total_elapsed_time", "total_timer_time", "total_distance", "total_ascent",
            "total_descent", "avg_heart_rate", "max_heart_rate", "avg_power", "max_power",
            "normalized_power", "num_laps"]
    totals = {k: session.get(k) for k in keys if session.get(k) is not None} if session else {}
    device = "unknown"
    if file_id:
        device = f"{file_id.get('manufacturer')} {file_id.get('garmin_product', file_id.get('product'))}"
    return records, presses, presses[0][0], device, totals


def note(src, text):
    print(f"make-replay.py: {src}: {text}", file=sys.stderr)


def end_after(records):
    """Where a ride with no stop ends: a second after its last record, so that second is ridden."""
    return records[-1]["timestamp"] + datetime.timedelta(seconds=1)


def timer_presses(timer, records, src):
    """The rider's start, pauses and stop from a FIT file's timer events, whatever their trigger.

    The session runs from the first timer start to the last timer stop, of any trigger: a Garmin
    starts on the rider's button (manual), others on movement (auto) or on a trainer's or head
    unit's signal (fitness_equipment). In between, a timer stop that a start follows is a pause
    only when the rider made it (manual): the device's auto-pauses are gaps the sim board fills
    standing still, for workoutd's own auto-pause to decide. With no usable start the ride
    starts at the first record, with no stop it ends after the last, and says so."""
    timer = sorted(timer, key=lambda e: e[0])
    first, last = records[0]["timestamp"], records[-1]["timestamp"]
    # A start after the last record starts nothing that was recorded.
    start = next((e for e in timer if e[1] == "start" and e[0] <= last), None)
    if start is None:
        note(src, "no timer start in the file: starting at the first record")
        start = (first, "start", None)
    after = [e for e in timer if e[0] >= start[0] and e is not start]
    stop = next((e for e in reversed(after) if e[1] == "stop"), None)
    if stop is None:
        note(src, "no timer stop in the file: ending after the last record")
        stop = (end_after(records), "stop", None)
    presses = [(start[0], "start")]
    between = [e for e in after if e[0] <= stop[0] and e is not stop]
    paused = False
    for index, (t, kind, trigger) in enumerate(between):
        resumed = any(k == "start" for _, k, _ in between[index + 1:])
        if kind == "stop" and trigger == "manual" and not paused and resumed:
            paused = True
            presses.append((t, "pause"))
        elif kind == "start" and paused:
            # the rider's pause ends at the next start, whoever made it
            paused = False
            presses.append((t, "resume"))
    presses.append((stop[0], "stop"))
    return presses


def local(tag):
    return tag.rsplit("}", 1)[-1]


def child(element, *path):
    """The first child along `path` of local tag names (namespaces ignored), or None."""
    for name in path:
        if element is None:
            return None
        element = next((c for c in element if local(c.tag) == name), None)
    return element


def number(element):
    return float(element.text) if element is not None and element.text else None


def timestamp(text):
    return datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))


def distance_m(a, b):
    """Great-circle distance (haversine, mean Earth radius), metres."""
    la1, lo1, la2, lo2 = map(math.radians, (a["lat"], a["lon"], b["lat"], b["lon"]))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371008.8 * math.asin(math.sqrt(h))


def fill_speeds(records):
    """GPX and most TCX carry no speed: the receiver's is the distance over the time."""
    previous = None
    for r in records:
        if r["lat"] is None:
            continue
        if r.get("speed") is None and previous is not None:
            seconds = (r["timestamp"] - previous["timestamp"]).total_seconds()
            if seconds > 0:
                r["speed"] = distance_m(previous, r) / seconds
        previous = r


def read_tcx(src):
    """Trackpoints, lap presses and the laps' totals of a TCX v2 file (its first activity)."""
    activity = child(ET.parse(src).getroot(), "Activities", "Activity")
    records, presses, timer, distance = [], [], 0.0, 0.0
    laps = [lap for lap in activity if local(lap.tag) == "Lap"]
    for index, lap in enumerate(laps):
        presses.append((timestamp(lap.get("StartTime")), "start" if index == 0 else "lap"))
        timer += number(child(lap, "TotalTimeSeconds")) or 0
        distance += number(child(lap, "DistanceMeters")) or 0
        for track in (t for t in lap if local(t.tag) == "Track"):
            for point in (p for p in track if local(p.tag) == "Trackpoint"):
                records.append({
                    "timestamp": timestamp(child(point, "Time").text),
                    "lat": number(child(point, "Position", "LatitudeDegrees")),
                    "lon": number(child(point, "Position", "LongitudeDegrees")),
                    "alt": number(child(point, "AltitudeMeters")),
                    "speed": number(child(point, "Extensions", "TPX", "Speed")),
                    "hr": number(child(point, "HeartRateBpm", "Value")),
                    "cadence": number(child(point, "Cadence")),
                    "power": number(child(point, "Extensions", "TPX", "Watts")),
                })
    records.sort(key=lambda r: r["timestamp"])
    # TCX has no timer stop: its laps say where the timer started, not where it stopped
    note(src, "no timer stop in a TCX file: ending after the last trackpoint")
    presses.append((end_after(records), "stop"))
    fill_speeds(records)
    creator = child(activity, "Creator", "Name")
    sport = activity.get("Sport", "").lower()
    totals = {"sport": {"biking": "cycling"}.get(sport, sport), "total_timer_time": round(timer, 3),
              "total_distance": round(distance, 3), "num_laps": len(laps)}
    # Garmin's lap extension (ActivityExtension/v2 LX): the device's own average and maximum
    # power; over one lap they are the ride's. Heart rate likewise.
    if len(laps) == 1:
        lap = laps[0]
        for key, path in (("avg_heart_rate", ("AverageHeartRateBpm", "Value")),
                          ("max_heart_rate", ("MaximumHeartRateBpm", "Value")),
                          ("avg_power", ("Extensions", "LX", "AvgWatts")),
                          ("max_power", ("Extensions", "LX", "MaxWatts"))):
            value = number(child(lap, *path))
            if value is not None:
                totals[key] = int(value)
    return records, presses, presses[0][0], creator.text if creator is not None else "unknown", totals


def read_gpx(src):
    """Track points of a GPX 1.1 file, with Garmin's TrackPointExtension (hr, cad, atemp)."""
    root = ET.parse(src).getroot()
    records = []
    for point in root.iter():
        if local(point.tag) != "trkpt":
            continue
        extension = child(point, "extensions", "TrackPointExtension")
        records.append({
            "timestamp": timestamp(child(point, "time").text),
            "lat": float(point.get("lat")), "lon": float(point.get("lon")),
            "alt": number(child(point, "ele")), "speed": None,
            "hr": number(child(extension, "hr")), "cadence": number(child(extension, "cad")),
            "temperature": number(child(extension, "atemp")),
            # Garmin's GPX extensions have no power; the commonest (Strava's, GoldenCheetah's)
            # is a <power> element beside the TrackPointExtension
            "power": number(child(point, "extensions", "power")),
        })
    records.sort(key=lambda r: r["timestamp"])
    fill_speeds(records)
    # GPX has no timer at all: the track is the ride
    note(src, "no timer in a GPX file: starting at the first point and ending after the last")
    presses = [(records[0]["timestamp"], "start"), (end_after(records), "stop")]
    track_type = next((t.text for t in root.iter() if local(t.tag) == "type" and t.text), "")
    return records, presses, records[0]["timestamp"], root.get("creator", "unknown"), {"sport": track_type}


def prepare_presses(presses):
    """One press per instant, in order."""
    # the device closes the last lap with its timer stop; that is one press, not two
    stop_times = {t for t, k in presses if k == "stop"}
    presses = [(t, k) for t, k in presses if not (k == "lap" and t in stop_times)]
    presses.sort(key=lambda p: p[0])
    return presses


def main(src, out, attribution):
    kind = src.rsplit(".", 1)[-1].lower()
    reader = {"fit": read_fit, "tcx": read_tcx, "gpx": read_gpx}.get(kind)
    if reader is None:
        sys.exit(f"make-replay.py: {src}: not a .fit, .tcx or .gpx file")
    records, presses, start, device, totals = reader(src)
    presses = prepare_presses(presses)

    def rel(ts):
        return int(round((ts - start).total_seconds()))

    rows = [(rel(t), 0 if k in ("start", "resume") else 2, f"{rel(t)},press,{k}") for t, k in presses]
    for r in records:
        t = rel(r["timestamp"])
        rows.append((t, 1, ",".join([
            str(t), "rec", fmt(r["lat"], 7), fmt(r["lon"], 7), fmt(r.get("alt"), 1), fmt(r.get("speed"), 3),
            fmt(r.get("hr"), 0), fmt(r.get("cadence"), 0), fmt(r.get("temperature"), 0),
            fmt(r.get("power"), 0)])))
    rows.sort(key=lambda x: (x[0], x[1]))
    with open(out, "w") as o:
        o.write(f"# workoutd replay ride, made by board/sim/make-replay.py from {src.split('/')[-1]}\n")
        for line in attribution.splitlines():
            o.write(f"# {line}\n")
        o.write(f"# device: {device}\n")
        o.write(f"# start: {start.strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
        if totals:
            o.write("# device totals: " + ", ".join(f"{k}={v}" for k, v in totals.items()) + "\n")
        o.write("t,kind,lat,lon,alt,speed,hr,cadence,temperature,power\n")
        for _, _, line in rows:
            o.write(line + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: " + __doc__.split("Usage: ", 1)[1].strip())
    main(sys.argv[1], sys.argv[2], sys.argv[3])
