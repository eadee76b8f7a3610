#!/usr/bin/env python3
"""Turn a recorded FIT activity into a replay ride for workoutd's simulated board.

Dev-time tool (not run by the build or tests): needs `pip install fitdecode==0.11.0` (MIT).
The output is what the sim board feeds through the same seams as real devices:

    # header lines: source, licence, start time (UTC), device totals
    t,kind,lat,lon,alt,speed,hr,cadence,temperature
    0,press,start
    1,rec,43.713393,-79.3660663,75.2,5.888,161,71,21
    ...

t is seconds since the device's timer start (integer; FIT records are 1 s). A `rec` row is one
instant of the world: position (deg), GPS altitude (m), speed (m/s), heart rate (bpm),
cadence (rpm), temperature (degC); an empty field is a channel the device had no value for.
A `press` row is a rider's button press taken from the FIT file: the manual timer start
(start), manual laps (lap), a manual timer stop followed by a start (pause, then resume) and
the last manual timer stop (stop). The device's *auto* pauses are
not presses: while auto-paused the device wrote no records, and the rider stood still, so
the sim board fills those gaps with the last position at zero speed and lets workoutd's own
auto-pause decide.

Usage: make-replay.py ACTIVITY.fit OUT.csv "source/licence text"
"""
import sys
import fitdecode

SEMICIRCLE_DEG = 180.0 / 2**31


def fmt(v, digits):
    if v is None:
        return ""
    return f"{v:.{digits}f}".rstrip("0").rstrip(".") if digits else str(int(round(v)))


def main(src, out, attribution):
    records, presses, session, file_id = [], [], None, None
    start = None
    for frame in fitdecode.FitReader(src):
        if not isinstance(frame, fitdecode.FitDataMessage):
            continue
        f = {fl.name: fl.value for fl in frame.fields}
        if frame.name == "file_id":
            file_id = f
        elif frame.name == "event" and f.get("event") == "timer" and f.get("timer_trigger") == "manual":
            if f["event_type"] == "start":
                start = start or f["timestamp"]
                presses.append((f["timestamp"], "start"))
            elif f["event_type"] in ("stop", "stop_all"):
                presses.append((f["timestamp"], "stop"))
        elif frame.name == "lap" and f.get("lap_trigger") == "manual" and f.get("event_type") == "stop":
            presses.append((f["timestamp"], "lap"))
        elif frame.name == "record":
            records.append(f)
        elif frame.name == "session":
            session = f
    if start is None:
        start = records[0]["timestamp"]
    # the device closes the last lap with its timer stop; that is one press, not two
    stop_times = {t for t, k in presses if k == "stop"}
    presses = [(t, k) for t, k in presses if not (k == "lap" and t in stop_times)]
    # A manual timer stop that a start follows is the rider pausing, not ending the ride (a
    # Garmin saves only at the final stop): pause and resume. Only the last stop is a stop.
    presses.sort(key=lambda p: p[0])
    timer = [i for i, (_, k) in enumerate(presses) if k in ("start", "stop")]
    for before, after in zip(timer, timer[1:]):
        if presses[before][1] == "stop" and presses[after][1] == "start":
            presses[before] = (presses[before][0], "pause")
            presses[after] = (presses[after][0], "resume")

    def rel(ts):
        return int(round((ts - start).total_seconds()))

    rows = [(rel(t), 0 if k in ("start", "resume") else 2, f"{rel(t)},press,{k}") for t, k in presses]
    for r in records:
        lat = r.get("position_lat")
        lon = r.get("position_long")
        alt = r.get("enhanced_altitude", r.get("altitude"))
        speed = r.get("enhanced_speed", r.get("speed"))
        rows.append((rel(r["timestamp"]), 1, ",".join([
            str(rel(r["timestamp"])), "rec",
            fmt(lat * SEMICIRCLE_DEG if lat is not None else None, 7),
            fmt(lon * SEMICIRCLE_DEG if lon is not None else None, 7),
            fmt(alt, 1), fmt(speed, 3), fmt(r.get("heart_rate"), 0),
            fmt(r.get("cadence"), 0), fmt(r.get("temperature"), 0)])))
    rows.sort(key=lambda x: (x[0], x[1]))
    with open(out, "w") as o:
        o.write(f"# workoutd replay ride, made by board/sim/make-replay.py from {src.split('/')[-1]}\n")
        for line in attribution.splitlines():
            o.write(f"# {line}\n")
        o.write(f"# device: {file_id.get('manufacturer')} {file_id.get('garmin_product', file_id.get('product'))}\n")
        o.write(f"# start: {start.strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
        keys = ["sport", "total_elapsed_time", "total_timer_time", "total_distance", "total_ascent",
                "total_descent", "avg_heart_rate", "max_heart_rate", "num_laps"]
        o.write("# device totals: " + ", ".join(f"{k}={session.get(k)}" for k in keys) + "\n")
        o.write("t,kind,lat,lon,alt,speed,hr,cadence,temperature\n")
        for _, _, line in rows:
            o.write(line + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
