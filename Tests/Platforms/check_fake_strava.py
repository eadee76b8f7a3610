#!/usr/bin/env python3
"""Checks fake_strava.py against what Strava's documentation says, with Python's own
http.client over verified TLS: the login, the refresh's rotation, an upload processed over a
few polls, duplicates by external_id and by file, a stale token, the rate limits, 5xx and
dropped connections. Exits 0 when all hold; prints the first that does not and exits 1.

Usage: check_fake_strava.py (needs the openssl command for a throwaway certificate)
"""

import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))


class Fake:
    def __init__(self, workdir, setup):
        self.cert, self.key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", self.key, "-out", self.cert], check=True, capture_output=True)
        self.state = os.path.join(workdir, "state")
        os.makedirs(self.state)
        with open(os.path.join(self.state, "setup.json"), "w") as out:
            json.dump(setup, out)
        self.process = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_strava.py"), "--cert", self.cert,
                                         "--key", self.key, "--port", "0", "--state", self.state],
                                        stdout=subprocess.DEVNULL)
        port_file = os.path.join(self.state, "port")
        for _ in range(100):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        self.port = int(open(port_file).read())
        self.context = ssl.create_default_context(cafile=self.cert)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def request(self, method, path, body=b"", headers=None):
        """(status, headers, parsed JSON or None), or ("dropped", words)."""
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read()
            return response.status, dict(response.getheaders()), json.loads(data) if data else None
        except (http.client.IncompleteRead, ConnectionError, ssl.SSLError, http.client.RemoteDisconnected) as error:
            return "dropped", type(error).__name__, None
        finally:
            connection.close()

    def token(self, **form):
        return self.request("POST", "/oauth/token", urllib.parse.urlencode(form).encode(),
                            {"Content-Type": "application/x-www-form-urlencoded"})

    def upload(self, access, external_id, data, name="ride.fit"):
        boundary = "check-boundary"
        parts = []
        for field, value in (("data_type", "fit"), ("external_id", external_id)):
            parts.append(b"--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (
                boundary.encode(), field.encode(), value.encode()))
        parts.append(b"--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                     b"Content-Type: application/octet-stream\r\n\r\n%s\r\n--%s--\r\n" % (
                         boundary.encode(), name.encode(), data, boundary.encode()))
        return self.request("POST", "/api/v3/uploads", b"".join(parts), {
            "Authorization": "Bearer " + access, "Content-Type": "multipart/form-data; boundary=" + boundary})

    def poll(self, access, upload_id):
        return self.request("GET", "/api/v3/uploads/%s" % upload_id, headers={"Authorization": "Bearer " + access})

    def add(self, setup):
        return self.request("POST", "/_fake/setup", json.dumps(setup).encode())

    def received(self):
        with open(os.path.join(self.state, "received.jsonl")) as lines:
            return [json.loads(line) for line in lines]


def expect(condition, words):
    if not condition:
        raise AssertionError(words)


def check(fake):
    app = {"client_id": "4711", "client_secret": "app-secret"}
    # The login: a code works once.
    status, _, tokens = fake.token(code="good-code", grant_type="authorization_code", **app)
    expect(status == 200 and tokens["token_type"] == "Bearer" and tokens["expires_in"] == 21600, tokens)
    status, _, refused = fake.token(code="good-code", grant_type="authorization_code", **app)
    expect(status == 400 and refused["errors"][0]["resource"] == "AuthorizationCode", refused)
    status, _, _ = fake.token(code="x", grant_type="authorization_code", client_id="4711", client_secret="no")
    expect(status == 401, "a wrong client secret is refused")

    # A refresh with hours left gives the same tokens; near expiry, new ones, the old refresh
    # token then refused.
    status, _, same = fake.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"], **app)
    expect(status == 200 and same["access_token"] == tokens["access_token"], "refresh ahead of time: same token")
    fake.add({"expires_at": int(time.time()) + 100})
    status, _, fresh = fake.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"], **app)
    expect(status == 200 and fresh["refresh_token"] != tokens["refresh_token"], "the refresh token rotates")
    status, _, _ = fake.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"], **app)
    expect(status == 400, "the old refresh token is refused")
    status, _, _ = fake.upload(tokens["access_token"], "old-token", b"x")
    expect(status == 401, "the replaced access token is refused")
    access = fresh["access_token"]

    # An upload processed over two polls, with the rate-limit headers.
    status, headers, upload = fake.upload(access, "workoutd-session-1-100", b"FIT one")
    expect(status == 201 and upload["status"] == "Your activity is still being processed.", upload)
    expect(headers["X-RateLimit-Limit"] == "200,2000" and "X-ReadRateLimit-Limit" not in headers, headers)
    polls = [fake.poll(access, upload["id_str"]) for _ in range(2)]
    expect(polls[0][2]["activity_id"] is None and polls[1][2]["activity_id"] is not None, polls)
    expect(polls[1][1]["X-ReadRateLimit-Usage"] == "2,2", polls[1][1])
    activity = polls[1][2]["activity_id"]

    # Duplicates: by external_id, and by the file's bytes.
    for external_id, data in (("workoutd-session-1-100", b"other bytes"), ("another-id", b"FIT one")):
        _, _, again = fake.upload(access, external_id, data)
        fake.poll(access, again["id"])
        _, _, done = fake.poll(access, again["id"])
        expect(done["error"] is not None and "duplicate of" in done["error"] and str(activity) in done["error"], done)
    expect(fake.poll(access, "1")[0] == 404, "an unknown upload is 404")

    # An expired token is 401.
    fake.add({"expires_at": int(time.time()) - 1})
    expect(fake.poll(access, upload["id"])[0] == 401, "an expired token is refused")
    fake.add({"expires_at": int(time.time()) + 21600})

    # Faults: each once, in order.
    fake.add({"faults": [{"method": "POST", "path": "/api/v3/uploads", "answer": 503},
                         {"method": "GET", "path": "/api/v3/uploads/", "answer": 429},
                         {"method": "GET", "path": "/api/v3/uploads/", "answer": 401}]})
    expect(fake.upload(access, "f", b"f")[0] == 503, "a scripted 503")
    status, headers, _ = fake.poll(access, upload["id"])
    expect(status == 429 and "Date" in headers and "X-RateLimit-Usage" in headers, headers)
    expect(fake.poll(access, upload["id"])[0] == 401, "a scripted stale token")
    expect(fake.poll(access, upload["id"])[0] == 200, "faults are used once")

    # A dropped reply: the file arrived, so sending it again is a duplicate.
    fake.add({"faults": [{"method": "POST", "path": "/api/v3/uploads", "answer": "drop_reply"}]})
    expect(fake.upload(access, "workoutd-session-2-200", b"FIT two")[0] == "dropped", "the reply is cut")
    _, _, again = fake.upload(access, "workoutd-session-2-200", b"FIT two")
    fake.poll(access, again["id"])
    expect("duplicate of" in (fake.poll(access, again["id"])[2]["error"] or ""), "the resent ride is a duplicate")
    # A dropped request: nothing arrived, so sending it again is new.
    fake.add({"faults": [{"method": "POST", "path": "/api/v3/uploads", "answer": "drop_request"}]})
    expect(fake.upload(access, "workoutd-session-3-300", b"FIT three" * 1000)[0] == "dropped", "the request is cut")
    _, _, third = fake.upload(access, "workoutd-session-3-300", b"FIT three" * 1000)
    fake.poll(access, third["id"])
    expect(fake.poll(access, third["id"])[2]["activity_id"] is not None, "a cut request made nothing")

    # The 15-minute read limit reached: 429.
    fake.add({"read_rate_limit": [1, 1000]})
    status, headers, _ = fake.poll(access, upload["id"])
    expect(status == 429 and headers["X-ReadRateLimit-Limit"] == "1,1000", headers)

    received = fake.received()
    uploads = [r for r in received if r["path"] == "/api/v3/uploads" and r.get("fields")]
    expect(uploads[0]["fields"] == {"data_type": "fit", "external_id": "workoutd-session-1-100"}, uploads[0])
    expect(uploads[0]["file_size"] == 7, uploads[0])


def main():
    with tempfile.TemporaryDirectory() as workdir:
        fake = Fake(workdir, {"codes": {"good-code": "read,activity:write"}})
        try:
            check(fake)
        except AssertionError as error:
            print("fake Strava: %s" % error)
            return 1
        finally:
            fake.stop()
    print("fake Strava: all checks hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
