#!/usr/bin/env python3
"""A WebDAV share (RFC 4918) as far as an upload uses one, Nextcloud-like: PUT of a file into
an existing collection (201 Created, 204 No Content when it replaced one; 409 Conflict when
the collection is missing, §9.7.1), `If-None-Match: *` answered 412 when the file exists
(RFC 9110 §13.1.2), MKCOL (§9.3: 201; 405 when it exists; 409 when its parent is missing),
basic auth (401 with a challenge). The share is DIR/files, served under /dav/.

Record: fake_platform_base's, with each stored file's SHA-256.
"""

import base64
import hashlib
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_platform_base as base  # noqa: E402

PREFIX = "/dav/"


class WebDAVHandler(base.FakeHandler):
    def local_path(self):
        """The file or folder the request's path names in DIR/files, or None outside it."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if not path.startswith(PREFIX):
            return None
        parts = [part for part in path[len(PREFIX):].split("/") if part]
        if any(part in (".", "..") for part in parts):
            return None
        return os.path.join(self.state_path("files"), *parts)

    def authorized(self, body_size):
        expected = "Basic " + base64.b64encode(f"{self.options.user}:{self.options.password}".encode()).decode()
        if self.headers.get("Authorization") == expected:
            return True
        self.record(method=self.command, path=self.path, status=401, size=body_size)
        self.answer(401, b"Unauthorized", [("WWW-Authenticate", 'Basic realm="fake webdav"')])
        return False

    def admitted(self):
        """The request's body and the local path it names, once no fault took it and its
        credentials are right; None when it has been answered."""
        if self.apply_fault():
            return None
        body = self.read_body()
        if not self.authorized(len(body)):
            return None
        return body, self.local_path()

    def do_PUT(self):
        admitted = self.admitted()
        if admitted is None:
            return
        body, target = admitted
        if target is None or self.path.endswith("/"):
            self.record(method="PUT", path=self.path, status=403, size=len(body))
            return self.answer(403, b"Forbidden")
        if not os.path.isdir(os.path.dirname(target)):
            self.record(method="PUT", path=self.path, status=409, size=len(body))
            return self.answer(409, b"Parent collection does not exist")
        existed = os.path.exists(target)
        if existed and self.headers.get("If-None-Match", "").strip() == "*":
            self.record(method="PUT", path=self.path, status=412, size=len(body))
            return self.answer(412, b"Precondition failed: the file exists")
        with open(target + ".part", "wb") as file:
            file.write(body)
        os.replace(target + ".part", target)
        status = 204 if existed else 201
        self.record(method="PUT", path=self.path, status=status, sha256=hashlib.sha256(body).hexdigest(),
                    size=len(body))
        self.answer(status)

    def do_MKCOL(self):
        admitted = self.admitted()
        if admitted is None:
            return
        body, target = admitted
        if target is None:
            self.record(method="MKCOL", path=self.path, status=403)
            return self.answer(403, b"Forbidden")
        if body:
            self.record(method="MKCOL", path=self.path, status=415)
            return self.answer(415, b"MKCOL takes no body")
        if os.path.exists(target):
            self.record(method="MKCOL", path=self.path, status=405)
            return self.answer(405, b"The collection exists")
        if not os.path.isdir(os.path.dirname(target.rstrip("/"))):
            self.record(method="MKCOL", path=self.path, status=409)
            return self.answer(409, b"Parent collection does not exist")
        os.mkdir(target)
        self.record(method="MKCOL", path=self.path, status=201)
        self.answer(201)


def main():
    def extra(parser):
        parser.add_argument("--user", required=True)
        parser.add_argument("--password", required=True)
    options = base.arguments("A fake WebDAV share over HTTPS.", extra)
    os.makedirs(os.path.join(options.state, "files"), exist_ok=True)
    return base.serve(WebDAVHandler, options)


if __name__ == "__main__":
    sys.exit(main())
