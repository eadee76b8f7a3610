#!/usr/bin/env python3
"""Extract the recorded altitude stream (time, altitude) of the corpus rides that have no replay
file, for workoutd's ascent tests (Tests/WorkoutCoreTests/AscentRideFixtures.swift).

Dev-time tool, not run by the build or tests. Needs gpxpy 1.6.2 and fitdecode 0.11.0 (PyPI).
Usage: make-altitude-fixtures.py CORPUS_DIR OUT_DIR

Output per ride: '# ' header lines (source, licence, sha256, what the file says about ascent),
then `t,alt` rows: t = seconds since the first point (as recorded, so gaps stay gaps),
alt = metres as recorded (GPX <ele>, TCX <AltitudeMeters>, FIT enhanced_altitude).
"""
import datetime, hashlib, os, re, sys


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def gpx_points(path):
    import gpxpy
    g = gpxpy.parse(open(path))
    return [(p.time, p.elevation) for t in g.tracks for s in t.segments for p in s.points
            if p.elevation is not None and p.time is not None]


def tcx_points(path):
    text = open(path).read()
    out = []
    for m in re.finditer(r"<Trackpoint>(.*?)</Trackpoint>", text, re.S):
        tm = re.search(r"<Time>([^<]+)</Time>", m.group(1))
        al = re.search(r"<AltitudeMeters>([^<]+)</AltitudeMeters>", m.group(1))
        if tm and al:
            out.append((datetime.datetime.fromisoformat(tm.group(1).replace("Z", "+00:00")),
                        float(al.group(1))))
    return out


def fit_points(path):
    import fitdecode
    out = []
    for frame in fitdecode.FitReader(path):
        if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "record":
            f = {x.name: x.value for x in frame.fields}
            alt = f.get("enhanced_altitude", f.get("altitude"))
            if alt is not None:
                out.append((f["timestamp"], alt))
    return out


RIDES = [
    ("riderx3.gpx", gpx_points, "riderx3-altitude.csv", [
        "Source: github firefly-cpp/sport-activities-features datasets/riderx3.gpx (commit 52c17d36),",
        "a Garmin Connect GPX export of a real ride (Slovenia, 2016-04-02), smart recording.",
        "Licence: MIT, Copyright (c) 2020-2026 Iztok Fister Jr. et al. (sport-activities-features LICENSE).",
        "GPX has no device totals; gpxpy 1.6.2 computes uphill 328.9 m, downhill 361.7 m."]),
    ("sport-activities-features_11.tcx", tcx_points, "garmin-edge-1000-altitude.csv", [
        "Source: github firefly-cpp/sport-activities-features tests/data/11.tcx (commit 52c17d36),",
        "a Garmin Edge 1000 ride exported via Garmin Connect (2017-08-14), 1 s recording.",
        "Licence: MIT (sport-activities-features LICENSE); the upstream dataset states no licence of its own.",
        "TCX has no total-ascent field."]),
    ("python-tcxparser_test.tcx", tcx_points, "forerunner-410-run-altitude.csv", [
        "Source: github vkurup/python-tcxparser tests/files/test.tcx (commit 5ecaac92),",
        "a Garmin Forerunner 410 run (2012-12-26), smart recording (4-8 s).",
        "Licence: BSD-2-Clause, Copyright (c) 2013-2025 Vinod Kurup (python-tcxparser LICENSE).",
        "TCX has no total-ascent field."]),
    ("garmin-fenix-5-bike.fit", fit_points, "garmin-fenix-5-altitude.csv", [
        "Source: github dtcooper/python-fitparse tests/files/garmin-fenix-5-bike.fit (commit c98b86e),",
        "a 60 s Garmin fenix 5 ride (2017-06-12).",
        "Licence: MIT, Copyright (c) 2011-2025 David Cooper, 2017-2025 Carey Metcalfe (python-fitparse LICENSE).",
        "Device session totals: total_ascent=0, total_descent=4."]),
]


def main(corpus, out_dir):
    for name, reader, out_name, about in RIDES:
        src = os.path.join(corpus, name)
        points = reader(src)
        t0 = points[0][0]
        with open(os.path.join(out_dir, out_name), "w") as o:
            o.write(f"# workoutd altitude fixture, made by make-altitude-fixtures.py from {name}\n")
            for line in about:
                o.write(f"# {line}\n")
            o.write(f"# sha256 of {name}: {sha256(src)}\n")
            o.write("t,alt\n")
            for t, alt in points:
                secs = (t - t0).total_seconds()
                o.write(f"{secs:g},{alt:.3f}".rstrip("0").rstrip(".") + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
