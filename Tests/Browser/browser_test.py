#!/usr/bin/env python3
"""The phone page in a real browser (issue 17): Debian's chromium, headless, driven through
chromedriver's W3C WebDriver protocol (plain HTTP and JSON: no client library needed).

The service runs on the simulated board, replaying the bundled ride's first minutes in real
time, its web server on loopback over HTTPS with the certificate the board made itself: the
browser trusts exactly that certificate (its public key's hash, as a rider trusts it by the
fingerprint `workoutctl pair` prints), and plain http:// is sent to https://. The browser pairs from the URL `workoutctl pair` prints,
watches the figures change, pauses and resumes from the page (and `workoutctl status` sees it),
sees the page follow when the simulated pause button is pressed (a press row of the ride), shows
the incident alarm's full-screen alert for a status that carries one (the simulated board has no
inertial sensor: the page's own render is handed the incident) and posts "fine" from it, stops
with the page's confirm, and opens the ride page. Screenshots of the live view and the ride page
are kept in $ARTIFACTS (default .build/artifacts/browser) for CI.

Usage: browser_test.py --bin DIR   (DIR holds workoutd and workoutctl)
"""
import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RIDE = os.path.join(ROOT, "board/sim/rides/garmin-edge-500-2011-09-25.csv")
BUTTON_PAUSE_AT = 50  # ride seconds: the simulated button's pause press


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def public_key_hash(certificate):
    """base64(SHA-256(SubjectPublicKeyInfo)) of a PEM certificate: what Chromium's
    --ignore-certificate-errors-spki-list names."""
    key = subprocess.run(["openssl", "x509", "-pubkey", "-noout", "-in", certificate], capture_output=True,
                         check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=key, capture_output=True,
                         check=True).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def served_fingerprint(port):
    """The SHA-256 fingerprint of the certificate the server presents, as "AB:CD:..."."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw) as tls:
            return ":".join(f"{b:02X}" for b in hashlib.sha256(tls.getpeercert(binary_form=True)).digest())


def wait_for(what, timeout, condition, every=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = condition()
            if last:
                return last
        except Exception as error:  # the page or service not there yet
            last = error
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


class WebDriver:
    """The few W3C WebDriver commands this test needs (https://www.w3.org/TR/webdriver2/)."""

    def __init__(self, port, trusted_key, profile):
        self.base = f"http://127.0.0.1:{port}"
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": shutil.which("chromium") or "/usr/bin/chromium",
                        # A phone's screen; root in a container needs --no-sandbox.
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=412,915",
                                 "--disable-dev-shm-usage", "--no-first-run", f"--user-data-dir={profile}",
                                 # This one certificate's key, and no other, despite its self-signature.
                                 f"--ignore-certificate-errors-spki-list={trusted_key}"],
                    },
                }
            }
        }
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)["value"]
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"webdriver {method} {path}: {error.read()[:300]!r}")

    def s(self, path, body=None, method=None):
        return self.call(method or ("POST" if body is not None else "GET"), f"/session/{self.session}{path}", body)

    def go(self, url):
        self.s("/url", {"url": url})

    def element(self, css):
        found = self.s("/element", {"using": "css selector", "value": css})
        return next(iter(found.values()))

    def text(self, css):
        return self.s(f"/element/{self.element(css)}/text")

    def displayed(self, css):
        return self.s(f"/element/{self.element(css)}/displayed")

    def click(self, css):
        self.s(f"/element/{self.element(css)}/click", {})

    def script(self, source):
        return self.s("/execute/sync", {"script": source, "args": []})

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.s("/screenshot")))

    def quit(self):
        try:
            self.s("", method="DELETE")
        except Exception:
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    artifacts = os.environ.get("ARTIFACTS", os.path.join(ROOT, ".build/artifacts/browser"))
    os.makedirs(artifacts, exist_ok=True)
    work = tempfile.mkdtemp(prefix="wdb-")
    state, runtime = os.path.join(work, "state"), os.path.join(work, "run")

    # The bundled ride's first 4 minutes, with a press of the pause button at BUTTON_PAUSE_AT.
    ride = os.path.join(work, "ride.csv")
    with open(RIDE) as source, open(ride, "w") as out:
        pressed = False
        for line in source:
            fields = line.split(",")
            if line.startswith("#") or line.startswith("t,"):
                out.write(line)
                continue
            t = float(fields[0])
            if fields[1] == "press" and fields[2].strip() != "start":
                continue
            if not pressed and t >= BUTTON_PAUSE_AT:
                out.write(f"{BUTTON_PAUSE_AT},press,pause\n")
                pressed = True
            if t > 240:
                break
            out.write(line)
    config = os.path.join(work, "workoutd.toml")
    web_port = free_port()
    with open(config, "w") as f:
        f.write(f'[sim]\nride = "{ride}"\nspeed = 1\n[auto_pause]\nenabled = false\n'
                f'[zones]\nheart_rate = "120,140,160,175"\n'
                f'[web]\nenabled = true\naddress = "127.0.0.1"\nport = {web_port}\n')

    log = open(os.path.join(work, "workoutd.log"), "w")

    def start_service():
        return subprocess.Popen([os.path.join(args.bin, "workoutd"), "--state-dir", state, "--runtime-dir", runtime,
                                 "--config", config], stderr=log)

    service = start_service()
    driver_port = free_port()
    # Chromium leaves its singleton socket's directory in $TMPDIR when chromedriver ends it: keep
    # that in the test's own directory, removed at the end, not in /tmp (two a run otherwise).
    browser_tmp = os.path.join(work, "browser-tmp")
    os.makedirs(browser_tmp)
    chromedriver = subprocess.Popen([shutil.which("chromedriver") or "/usr/bin/chromedriver", f"--port={driver_port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=dict(os.environ, TMPDIR=browser_tmp))
    browser = None
    failures = []
    passes = []

    def ctl(*words):
        return subprocess.run([os.path.join(args.bin, "workoutctl"), *words, "--state-dir", state,
                               "--runtime-dir", runtime], capture_output=True, text=True, check=True).stdout

    def engine_state():
        return json.loads(ctl("status", "--json"))["state"]

    def step(name, body):
        started = time.monotonic()
        try:
            body()
            passes.append(name)
            print(f"PASS {name} ({time.monotonic() - started:.1f} s)", flush=True)
        except Exception as error:
            failures.append(name)
            print(f"FAIL {name}: {error}", flush=True)
            raise

    try:
        wait_for("workoutd to be ready", 30, lambda: "ready:" in open(log.name).read())
        wait_for("chromedriver", 30, lambda: urllib.request.urlopen(f"http://127.0.0.1:{driver_port}/status").read())
        trusted_key = public_key_hash(os.path.join(state, "web-certificate.pem"))
        browser = WebDriver(driver_port, trusted_key, os.path.join(work, "profile"))

        def refused_without_pairing():
            browser.go(f"http://127.0.0.1:{web_port}/")
            wait_for("the page over https", 15, lambda: browser.script("return location.href").startswith("https://"))
            wait_for("the pairing prompt", 15, lambda: browser.displayed("#pairing"))
            assert not browser.displayed("#live"), "the live view shows without a token"
            assert not browser.displayed("#plain-warning"), "the plain-HTTP warning shows over HTTPS"
            # A wrong code, typed: refused with a message, still unpaired.
            browser.script("document.getElementById('pair-code').value = 'AAAA-AAAA'")
            browser.click("#pair-button")
            wait_for("the refusal", 10, lambda: "not the code" in browser.text("#pair-message")
                     or "no pairing code" in browser.text("#pair-message"))

        def pairs_from_the_printed_url():
            out = ctl("pair", "--no-qr")
            url = re.search(r"open on the phone: (https://127\.0\.0\.1\S+)", out).group(1)
            printed = re.search(r"certificate, SHA-256: ([0-9A-F:]{95})", out).group(1)
            served = served_fingerprint(web_port)
            assert printed == served, f"workoutctl pair printed {printed}, the server presents {served}"
            browser.go(url)
            wait_for("the live view", 15, lambda: browser.displayed("#live"))
            href = browser.script("return location.href")
            assert "pair=" not in href, f"the code stays in the address bar: {href}"
            assert "1  paired" in ctl("pair", "--list")

        def figures_change():
            wait_for("running", 30, lambda: browser.text("#state").lower() == "running")
            first = browser.text("#f-timer")
            wait_for("the timer to move", 10, lambda: browser.text("#f-timer") != first)
            wait_for("a distance", 10, lambda: browser.text("#f-distance") not in ("–", "0.00"))
            wait_for("a heart rate", 10, lambda: browser.text("#f-hr") != "–")
            assert browser.text("#link") == "live", browser.text("#link")
            browser.screenshot(os.path.join(artifacts, "live-running.png"))

        def the_incident_alert():
            # Every status the live feed brings gets an incident while window.__incident says so;
            # its countdown from a deadline here, as the engine's would run.
            browser.script("""
                window.__posted = [];
                const fetch0 = window.fetch;
                window.fetch = (path, options) => {
                  if (options && options.body) window.__posted.push([path, options.body]);
                  return fetch0(path, options);
                };
                window.__until = Date.now() + 30000;
                window.__incident = () => ({ phase: "suspected", impact: 4.24, tilt: 82,
                                             remaining: Math.max(0, (window.__until - Date.now()) / 1000) });
                const render0 = render;
                window.render = (status) => render0(window.__incident
                  ? Object.assign({}, status, { incident: window.__incident() }) : status);
                render(lastStatus);""")
            wait_for("the alert", 5, lambda: browser.displayed("#incident"))
            assert browser.text("#incident-title") == "Fall detected", browser.text("#incident-title")
            assert "impact 4.2 g" in browser.text("#incident-impact"), browser.text("#incident-impact")
            first = int(browser.text("#incident-countdown").split()[0])
            assert 25 <= first <= 30, first
            wait_for("the countdown to run", 5,
                     lambda: int(browser.text("#incident-countdown").split()[0]) < first)
            browser.screenshot(os.path.join(artifacts, "incident.png"))
            browser.click("#incident-fine")
            # No alarm is on in the service itself: it takes the command and says so.
            wait_for("the service's answer to fine", 10, lambda: "incident" in browser.text("#incident-message"))
            posted = browser.script("return window.__posted")
            assert ["/api/control", '{"command":"fine"}'] in posted, posted
            browser.script("""window.__incident = () => ({ phase: "confirmed", impact: 4.24, tilt: 82 });
                              render(lastStatus);""")
            wait_for("confirmed", 5, lambda: browser.text("#incident-title") == "Incident confirmed")
            assert browser.text("#incident-countdown") == "", browser.text("#incident-countdown")
            browser.script("window.__incident = null")
            wait_for("the alert to go with the next status", 10, lambda: not browser.displayed("#incident"))

        def notes_from_the_phone():
            browser.click("#a-drink")
            wait_for("the drink noted", 10, lambda: "drink 250 ml" in browser.text("#note-message"))
            browser.script("document.getElementById('note-text').value = 'legs heavy <b>'")
            browser.click("#a-note")
            wait_for("the note noted", 10, lambda: "legs heavy" in browser.text("#note-message"))
            events = json.loads(ctl("show", "1", "--json"))["events"]
            notes = [e for e in events if e["kind"] == "annotation"]
            assert [n["cause"] for n in notes] == ["drink", "note"], notes
            assert notes[0]["value"] == 250 and notes[1]["detail"] == "legs heavy <b>", notes

        def pause_and_resume_from_the_page():
            browser.click("#c-pause")
            wait_for("workoutctl to see the pause", 10, lambda: engine_state() == "paused")
            wait_for("the page to say paused", 10, lambda: browser.text("#state").lower() == "paused")
            browser.click("#c-resume")
            wait_for("workoutctl to see the resume", 10, lambda: engine_state() == "running")
            wait_for("the page to say running", 10, lambda: browser.text("#state").lower() == "running")

        def the_page_follows_the_button():
            # The ride's pause press at BUTTON_PAUSE_AT ride seconds (real time).
            wait_for("the button's pause on the page", BUTTON_PAUSE_AT + 30,
                     lambda: browser.text("#state").lower() == "paused", every=0.5)
            assert engine_state() == "paused"
            assert re.search(r"running → paused \(button", open(log.name).read()), "the pause was not the button's"
            browser.screenshot(os.path.join(artifacts, "live-paused.png"))

        def stop_needs_a_confirm():
            browser.click("#c-stop")
            wait_for("the stop button to ask again", 10, lambda: "again" in browser.text("#c-stop").lower())
            time.sleep(0.5)  # room for a stop that one tap must not have sent
            assert engine_state() == "paused", "one tap stopped the workout"
            browser.click("#c-stop")
            wait_for("the stop", 15, lambda: engine_state() in ("stopped", "ended"))
            wait_for("the page to follow", 10, lambda: browser.text("#state").lower() in ("stopped", "ended"))

        def the_link_drops_and_comes_back():
            nonlocal service
            service.terminate()
            service.wait(timeout=20)
            wait_for("the page to say the figures are stale", 15,
                     lambda: "no link" in browser.text("#link") and "old" in browser.text("#link"))
            stale = browser.text("#link")
            service = start_service()
            wait_for("the page to reconnect by itself", 30, lambda: browser.text("#link") == "live")
            print(f"  (the page said {stale!r}, then live again)", flush=True)

        def the_ride_page():
            browser.go(f"https://127.0.0.1:{web_port}/#/rides")
            wait_for("the ride list", 15, lambda: browser.displayed("#rides") and "Ride 1" in browser.text("#ride-list"))
            browser.click('#ride-list a[href="#/rides/1"]')
            wait_for("the ride page", 15, lambda: browser.displayed("#ride") and browser.script(
                "return document.querySelectorAll('#ride-body svg.chart').length") >= 4)
            body = browser.text("#ride-body")
            for word in ("Distance", "Laps", "Events", "FIT", "GPX", "TCX", "CSV", "Time in zone: heart rate"):
                assert word in body, f"{word} missing from the ride page"
            bands = browser.script("return document.querySelectorAll('#ride-body svg.chart rect').length")
            assert bands >= 5, f"no zone bands or zone bars drawn ({bands})"
            browser.screenshot(os.path.join(artifacts, "ride.png"))
            # How it felt, after the ride: kept as events, and in the GPX's description.
            browser.script("document.getElementById('r-rpe').value = '7';"
                           "document.getElementById('r-mood').value = 'slightly pleasant'")
            browser.click("#r-save")
            # Two notes, each its own event: the page may draw the first before the second is in.
            wait_for("the rating in the events", 15, lambda: "RPE 7 (very hard)" in browser.text("#ride-body")
                     and "slightly pleasant" in browser.text("#ride-body"))
            # A download link serves the file.
            link = browser.script("return document.querySelector('a[data-format=gpx]').href")
            size = browser.script(
                "return fetch(arguments[0] || document.querySelector('a[data-format=gpx]').href)"
                ".then(r => r.text()).then(t => t.length)")
            assert size and size > 1000, f"{link}: {size}"
            desc = browser.script(
                "return fetch(document.querySelector('a[data-format=gpx]').href).then(r => r.text())"
                ".then(t => (t.match(/<desc>[^<]*<\\/desc>/) || [''])[0])")
            for words in ("drink 250 ml at", "legs heavy &lt;b&gt;", "RPE 7 (very hard)", "mood slightly pleasant"):
                assert words in desc, f"{words!r} not in the GPX's desc: {desc!r}"

        def a_damaged_second_is_told():
            # A flipped type byte leaves text where a point's time must be: the ride page leaves
            # that second out and says so.
            db = sqlite3.connect(os.path.join(state, "workoutd.db"), timeout=10)
            with db:
                db.execute("UPDATE point SET wall = 'x' WHERE session_id = 1 AND seq = 2")
            db.close()
            browser.script("window.loadRide(1)")
            wait_for("the left-out row on the ride page", 15,
                     lambda: "1 point unreadable (a damaged record)" in browser.text("#ride-body"))

        step("refused without pairing", refused_without_pairing)
        step("pairs from the URL workoutctl pair prints", pairs_from_the_printed_url)
        step("the figures change", figures_change)
        step("the incident alert: countdown, confirmed, I'm fine posts fine", the_incident_alert)
        step("a drink and a note from the phone", notes_from_the_phone)
        step("pause and resume from the page, seen by workoutctl", pause_and_resume_from_the_page)
        step("the page follows the simulated pause button", the_page_follows_the_button)
        step("stop needs a confirm", stop_needs_a_confirm)
        step("the link drops and comes back", the_link_drops_and_comes_back)
        step("the ride page", the_ride_page)
        step("a damaged second is told on the ride page", a_damaged_second_is_told)
    except Exception:
        pass
    finally:
        if browser:
            try:
                browser.screenshot(os.path.join(artifacts, "last.png"))
            except Exception:
                pass
            browser.quit()
        chromedriver.terminate()
        service.terminate()
        try:
            service.wait(timeout=20)
        except subprocess.TimeoutExpired:
            service.kill()
        log.close()
        if failures:
            print(open(log.name).read()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print(f"browser: {len(passes)} passed, {len(failures)} failed"
          f"{' (it stops at the first failure)' if failures else ''}; screenshots in {artifacts}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
