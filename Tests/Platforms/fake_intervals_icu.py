#!/usr/bin/env python3
"""intervals.icu's activity upload, as its API cookbook on forum.intervals.icu documents it:
POST /api/v1/athlete/{id}/activities, multipart/form-data with the file in the field `file`,
basic auth with the user API_KEY and the athlete's key ("0" in the path: the key's own athlete).
The answer names the new activity. The same file again (its hash: "it won't create duplicate
activities", the platform's developer in the forum) makes no second activity: it is answered
409 Conflict naming the activity it already has.

State (besides fake_platform_base's faults and record): DIR/activities.json, the activities
made, by the SHA-256 of their file.
"""

import base64
import email.parser
import email.policy
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_platform_base as base  # noqa: E402

UPLOAD_PATH = re.compile(r"^/api/v1/athlete/([A-Za-z0-9_-]+)/activities(\?.*)?$")


def form_parts(content_type, body):
    """The parts of a multipart/form-data body: {name: (filename, bytes)}."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    if not message.is_multipart():
        return {}
    parts = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            parts[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return parts


class IntervalsHandler(base.FakeHandler):
    def do_POST(self):
        if self.apply_fault():
            return
        body = self.read_body()
        match = UPLOAD_PATH.match(self.path)
        if not match:
            self.record(method="POST", path=self.path, status=404, size=len(body))
            return self.answer_json(404, {"status": 404, "error": "Not found"})
        expected = "Basic " + base64.b64encode(f"API_KEY:{self.options.api_key}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.record(method="POST", path=self.path, status=401, size=len(body))
            return self.answer_json(401, {"status": 401, "error": "Unauthorized"})
        if match.group(1) not in ("0", self.options.athlete):
            self.record(method="POST", path=self.path, status=403, size=len(body))
            return self.answer_json(403, {"status": 403, "error": "Access denied"})
        parts = form_parts(self.headers.get("Content-Type", ""), body)
        if "file" not in parts or not parts["file"][1]:
            self.record(method="POST", path=self.path, status=400, size=len(body))
            return self.answer_json(400, {"status": 400, "error": "No file in the 'file' field"})
        filename, content = parts["file"]
        digest = hashlib.sha256(content).hexdigest()
        with base.FakeHandler.lock:
            path = self.state_path("activities.json")
            try:
                with open(path) as file:
                    activities = json.load(file)
            except FileNotFoundError:
                activities = {}
            known = activities.get(digest)
            if known is None:
                activity = f"i{1000 + len(activities)}"
                activities[digest] = {"id": activity, "filename": filename, "size": len(content)}
                with open(path + ".new", "w") as file:
                    json.dump(activities, file)
                os.replace(path + ".new", path)
        if known is not None:
            self.record(method="POST", path=self.path, status=409, sha256=digest, size=len(content), duplicate=True)
            return self.answer_json(409, {"status": 409, "error": f"Duplicate of activity {known['id']}"})
        self.record(method="POST", path=self.path, status=201, sha256=digest, size=len(content), filename=filename)
        athlete = self.options.athlete
        self.answer_json(201, {"icu_athlete_id": athlete, "id": activity,
                               "activities": [{"icu_athlete_id": athlete, "id": activity}]})


def main():
    def extra(parser):
        parser.add_argument("--athlete", required=True, help="the athlete's id, i and digits")
        parser.add_argument("--api-key", required=True)
    options = base.arguments("A fake intervals.icu activity upload over HTTPS.", extra)
    return base.serve(IntervalsHandler, options)


if __name__ == "__main__":
    sys.exit(main())
