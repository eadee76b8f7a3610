#!/usr/bin/env python3
"""A fake Strava over HTTPS for the uploader's tests: Python 3's standard library only.

It behaves as Strava's documentation says (developers.strava.com/docs/authentication,
/docs/uploads, /docs/rate-limits):

- POST /oauth/token: grant_type=authorization_code trades a code the test allowed for tokens;
  grant_type=refresh_token answers the same tokens while the access token has more than an
  hour left, else a new access token and a new refresh token (the old one stops working).
- POST /api/v3/uploads (multipart: file, data_type, external_id): 201 with the upload "still
  being processed"; GET /api/v3/uploads/{id} answers so for `processing_polls` polls, then
  with the activity's id, or with "<file> duplicate of activity N" when the external_id or the
  file's bytes were seen before.
- Every API answer carries X-RateLimit-Limit/-Usage (and X-ReadRateLimit-* for the
  non-upload endpoints); past a limit, 429. An access token past its expires_at gets 401.
- Faults the test scripts, each used once, in order, by the first request they match:
  an HTTP status (429, 500, 503, 401...), "drop_request" (the connection is closed halfway
  through the request's body, nothing done) or "drop_reply" (the request is done, the answer
  cut halfway through its body).

Usage: fake_strava.py --cert CERT --key KEY --port PORT --state DIR

DIR/setup.json, if present, sets the fake up at start; POST /_fake/setup merges more into it
(a "faults" list is appended to the faults still pending). With --port 0 the port chosen is
written to DIR/port. Every request received is appended to DIR/received.jsonl (the file's
SHA-256 rather than its bytes); the tokens, uploads and activities are in DIR/state.json and
at GET /_fake/state.
"""

import argparse
import hashlib
import http.server
import json
import os
import secrets
import signal
import ssl
import threading
import time
import urllib.parse

DEFAULTS = {
    "client_id": "4711",
    "client_secret": "app-secret",
    # Authorization codes the rider "approved", and the scope each granted.
    "codes": {},
    # The athlete's current tokens.
    "access_token": None,
    "refresh_token": None,
    "expires_at": 0,
    "token_lifetime": 21600,
    "processing_polls": 2,
    # 15-minute and daily limits: overall, and for the non-upload ("read") endpoints.
    "rate_limit": [200, 2000],
    "read_rate_limit": [100, 1000],
    "faults": [],
}

STILL_PROCESSING = "Your activity is still being processed."
READY = "Your activity is ready."
ERRORED = "There was an error processing your activity."
REFRESH_MARGIN = 3600


def fault(message, resource, field, code):
    return {"message": message, "errors": [{"resource": resource, "field": field, "code": code}]}


class Strava:
    """The fake's state; every method runs under `lock`."""

    def __init__(self, state_dir, setup):
        self.lock = threading.Lock()
        self.state_dir = state_dir
        self.settings = dict(DEFAULTS)
        self.settings["faults"] = []
        self.merge(setup)
        self.uploads = {}
        self.activities = []  # {"id", "external_id", "sha256"}
        self.next_upload_id = 16486788
        self.next_activity_id = 9876543210
        self.usage = [0, 0]
        self.read_usage = [0, 0]
        self.windows = self.current_windows()

    def merge(self, setup):
        setup = dict(setup)
        faults = setup.pop("faults", [])
        self.settings.update(setup)
        self.settings["faults"] = self.settings["faults"] + list(faults)

    def save(self):
        state = {
            "access_token": self.settings["access_token"],
            "refresh_token": self.settings["refresh_token"],
            "expires_at": self.settings["expires_at"],
            "uploads": self.uploads,
            "activities": self.activities,
            "usage": self.usage,
            "read_usage": self.read_usage,
            "faults_pending": self.settings["faults"],
        }
        path = os.path.join(self.state_dir, "state.json")
        with open(path + ".tmp", "w") as out:
            json.dump(state, out, indent=1, sort_keys=True)
        os.replace(path + ".tmp", path)
        return state

    def record(self, entry):
        with open(os.path.join(self.state_dir, "received.jsonl"), "a") as out:
            out.write(json.dumps(entry, sort_keys=True) + "\n")

    def take_fault(self, method, path):
        for index, item in enumerate(self.settings["faults"]):
            if item.get("method", method) == method and path.startswith(item.get("path", "")):
                del self.settings["faults"][index]
                return item["answer"]
        return None

    # Rate limits: the 15-minute window turns at 0, 15, 30 and 45 past the hour, the day at
    # midnight UTC.
    @staticmethod
    def current_windows():
        now = int(time.time())
        return (now // 900, now // 86400)

    def count(self, is_read):
        windows = self.current_windows()
        if windows[1] != self.windows[1]:
            self.usage, self.read_usage = [0, 0], [0, 0]
        elif windows[0] != self.windows[0]:
            self.usage[0], self.read_usage[0] = 0, 0
        self.windows = windows
        self.usage = [self.usage[0] + 1, self.usage[1] + 1]
        if is_read:
            self.read_usage = [self.read_usage[0] + 1, self.read_usage[1] + 1]

    def limit_headers(self, is_read):
        limit, usage = self.settings["rate_limit"], self.usage
        headers = [
            ("X-RateLimit-Limit", "%d,%d" % tuple(limit)),
            ("X-RateLimit-Usage", "%d,%d" % tuple(usage)),
        ]
        if is_read:
            headers += [
                ("X-ReadRateLimit-Limit", "%d,%d" % tuple(self.settings["read_rate_limit"])),
                ("X-ReadRateLimit-Usage", "%d,%d" % tuple(self.read_usage)),
            ]
        return headers

    def over_limit(self, is_read):
        pairs = [(self.settings["rate_limit"], self.usage)]
        if is_read:
            pairs.append((self.settings["read_rate_limit"], self.read_usage))
        return any(used > allowed for limit, usage in pairs for allowed, used in zip(limit, usage))

    # OAuth.
    def issue_tokens(self):
        self.settings["access_token"] = secrets.token_hex(20)
        self.settings["refresh_token"] = secrets.token_hex(20)
        self.settings["expires_at"] = int(time.time()) + int(self.settings["token_lifetime"])

    def token_answer(self):
        expires_at = self.settings["expires_at"]
        return {
            "token_type": "Bearer",
            "access_token": self.settings["access_token"],
            "expires_at": expires_at,
            "expires_in": max(0, expires_at - int(time.time())),
            "refresh_token": self.settings["refresh_token"],
        }

    def oauth_token(self, form):
        if form.get("client_id") != self.settings["client_id"] or form.get(
                "client_secret") != self.settings["client_secret"]:
            return 401, fault("Authorization Error", "Application", "client_id", "invalid")
        grant = form.get("grant_type")
        if grant == "authorization_code":
            scope = self.settings["codes"].pop(form.get("code", ""), None)
            if scope is None:
                return 400, fault("Bad Request", "AuthorizationCode", "code", "invalid")
            self.issue_tokens()
            answer = self.token_answer()
            answer["athlete"] = {"id": 134815, "firstname": "Fake", "lastname": "Rider"}
            return 200, answer
        if grant == "refresh_token":
            current = self.settings["refresh_token"]
            if current is None or form.get("refresh_token") != current:
                return 400, fault("Bad Request", "RefreshToken", "refresh_token", "invalid")
            if self.settings["expires_at"] - time.time() <= REFRESH_MARGIN:
                self.issue_tokens()
            return 200, self.token_answer()
        return 400, fault("Bad Request", "grant_type", "grant_type", "invalid")

    def authorized(self, header):
        token = header[len("Bearer "):] if header and header.startswith("Bearer ") else None
        return (token is not None and token == self.settings["access_token"]
                and time.time() < self.settings["expires_at"])

    # Uploads.
    def create_upload(self, fields, file_name, file_bytes):
        data_type = fields.get("data_type")
        if file_bytes is None:
            return 400, fault("Bad Request", "Upload", "file", "not a file")
        if data_type not in ("fit", "fit.gz", "tcx", "tcx.gz", "gpx", "gpx.gz"):
            return 400, fault("Bad Request", "Upload", "data_type", "invalid")
        external_id = fields.get("external_id") or file_name
        digest = hashlib.sha256(file_bytes).hexdigest()
        upload_id = self.next_upload_id
        self.next_upload_id += 1
        original = next((a for a in self.activities
                         if a["external_id"] == external_id or a["sha256"] == digest), None)
        upload = {
            "id": upload_id,
            "external_id": external_id,
            "sha256": digest,
            "file_name": file_name,
            "polls_left": int(self.settings["processing_polls"]),
            "duplicate_of": original["id"] if original else None,
            "activity_id": None,
        }
        if original is None:
            # The activity is made now, so that a second upload of the same ride, even before
            # this one's processing ends, is a duplicate (Strava checks at processing).
            upload["activity_id"] = self.next_activity_id
            self.activities.append({"id": self.next_activity_id, "external_id": external_id, "sha256": digest})
            self.next_activity_id += 1
        self.uploads[str(upload_id)] = upload
        return 201, self.upload_status(upload)

    def poll_upload(self, upload_id):
        upload = self.uploads.get(upload_id)
        if upload is None:
            return 404, fault("Record Not Found", "Upload", "id", "invalid")
        if upload["polls_left"] > 0:
            upload["polls_left"] -= 1
        return 200, self.upload_status(upload)

    @staticmethod
    def upload_status(upload):
        status = {"id": upload["id"], "id_str": str(upload["id"]), "external_id": upload["external_id"],
                  "error": None, "status": STILL_PROCESSING, "activity_id": None}
        if upload["polls_left"] > 0:
            return status
        if upload["duplicate_of"] is not None:
            original = upload["duplicate_of"]
            status["error"] = "%s duplicate of <a href='/activities/%d' target='_blank'>%d</a>" % (
                upload["file_name"], original, original)
            status["status"] = ERRORED
        else:
            status["status"] = READY
            status["activity_id"] = upload["activity_id"]
        return status


def parse_multipart(content_type, body):
    """The fields and the file of a multipart/form-data body (RFC 7578)."""
    params = dict(p.strip().split("=", 1) for p in content_type.split(";")[1:] if "=" in p)
    boundary = params.get("boundary", "").strip('"').encode()
    if not boundary:
        raise ValueError("no boundary")
    fields, file_name, file_bytes = {}, None, None
    for part in body.split(b"--" + boundary)[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.partition(b"\r\n\r\n")
        if content.endswith(b"\r\n"):
            content = content[:-2]
        disposition = ""
        for line in head.decode("utf-8", "replace").split("\r\n"):
            if line.lower().startswith("content-disposition:"):
                disposition = line
        attributes = {}
        for item in disposition.split(";")[1:]:
            if "=" in item:
                key, value = item.strip().split("=", 1)
                attributes[key] = value.strip('"')
        if "filename" in attributes:
            file_name, file_bytes = attributes["filename"], content
        elif "name" in attributes:
            fields[attributes["name"]] = content.decode("utf-8")
    return fields, file_name, file_bytes


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    strava = None  # set by main

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.handle_request()

    def do_POST(self):
        self.handle_request()

    def answer(self, status, payload, headers=(), cut=False):
        body = json.dumps(payload).encode() if payload is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if cut:
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)

    def handle_request(self):
        strava = self.strava
        path = urllib.parse.urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        with strava.lock:
            injected = None if path.startswith("/_fake/") else strava.take_fault(self.command, path)
            strava.save()
        if injected == "drop_request":
            self.rfile.read(length // 2)
            strava.record({"method": self.command, "path": path, "fault": "drop_request"})
            self.close_connection = True
            self.connection.shutdown(2)
            return
        body = self.rfile.read(length) if length else b""
        with strava.lock:
            self.respond(strava, path, body, injected)
            strava.save()

    def respond(self, strava, path, body, injected):
        entry = {"method": self.command, "path": path, "at": time.time()}
        if injected is not None:
            entry["fault"] = injected
        if path == "/_fake/setup" and self.command == "POST":
            strava.merge(json.loads(body or b"{}"))
            return self.answer(200, {"ok": True})
        if path == "/_fake/state" and self.command == "GET":
            return self.answer(200, strava.save())
        cut = injected == "drop_reply"
        if path == "/oauth/token" and self.command == "POST":
            form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace")))
            entry["grant_type"] = form.get("grant_type")
            entry["refresh_token"] = form.get("refresh_token")
            strava.record(entry)
            if isinstance(injected, int):
                return self.answer(injected, fault("Injected", "Fake", "fault", str(injected)))
            status, payload = strava.oauth_token(form)
            return self.answer(status, payload, cut=cut)
        if not path.startswith("/api/v3/"):
            strava.record(entry)
            return self.answer(404, fault("Record Not Found", "Path", "path", "invalid"))
        is_upload = path == "/api/v3/uploads" and self.command == "POST"
        is_read = not is_upload
        entry["authorization"] = self.headers.get("Authorization")
        strava.count(is_read)
        limits = strava.limit_headers(is_read)
        date = [("Date", self.date_time_string())]
        if injected == 429 or strava.over_limit(is_read):
            strava.record(dict(entry, answer=429))
            return self.answer(429, fault("Rate Limit Exceeded", "Application", "rate limit", "exceeded"),
                               limits + date)
        if isinstance(injected, int):
            strava.record(entry)
            if injected == 401:
                return self.answer(401, fault("Authorization Error", "Athlete", "access_token", "invalid"), limits)
            return self.answer(injected, {"message": "Injected %d" % injected}, limits)
        if not strava.authorized(self.headers.get("Authorization")):
            strava.record(dict(entry, answer=401))
            return self.answer(401, fault("Authorization Error", "Athlete", "access_token", "invalid"), limits)
        if is_upload:
            try:
                fields, file_name, file_bytes = parse_multipart(self.headers.get("Content-Type", ""), body)
            except ValueError:
                strava.record(entry)
                return self.answer(400, fault("Bad Request", "Upload", "file", "not multipart"), limits)
            entry.update({"fields": fields, "file_name": file_name,
                          "file_sha256": hashlib.sha256(file_bytes).hexdigest() if file_bytes is not None else None,
                          "file_size": len(file_bytes) if file_bytes is not None else None})
            status, payload = strava.create_upload(fields, file_name, file_bytes)
            strava.record(dict(entry, answer=status))
            return self.answer(status, payload, limits, cut=cut)
        if path.startswith("/api/v3/uploads/") and self.command == "GET":
            status, payload = strava.poll_upload(path[len("/api/v3/uploads/"):])
            strava.record(dict(entry, answer=status))
            return self.answer(status, payload, limits, cut=cut)
        strava.record(entry)
        return self.answer(404, fault("Record Not Found", "Path", "path", "invalid"), limits)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state", required=True, help="the state directory")
    args = parser.parse_args()
    # A test runner may ignore SIGTERM, and an ignored signal stays ignored across exec.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.makedirs(args.state, exist_ok=True)
    setup_path = os.path.join(args.state, "setup.json")
    setup = json.load(open(setup_path)) if os.path.exists(setup_path) else {}
    Handler.strava = Strava(args.state, setup)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(os.path.join(args.state, "port.tmp"), "w") as out:
        out.write(str(server.server_address[1]))
    os.replace(os.path.join(args.state, "port.tmp"), os.path.join(args.state, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()
