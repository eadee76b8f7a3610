"""What the fake platforms share: an HTTPS server (Python's ssl module, the certificate and key
given), the faults a test switches on, and a record of what was received.

A fake is run as `python3 fake_NAME.py --port PORT --cert CERT --key KEY --state DIR ...`; the
port it listens on (PORT 0: one the kernel picks) is written to DIR/port once it listens.

Faults: the lines of DIR/faults, one taken for each request that arrives, in order:
  429 SECONDS        answer 429 Too Many Requests, Retry-After: SECONDS
  429-date SECONDS   the same, Retry-After as an HTTP-date SECONDS after the reply's Date
  5xx                answer that status (500, 502, 503, ...)
  redirect URL       answer 307 Temporary Redirect to URL
  drop               read half the body, then close the connection without an answer
  silent             read the request, then say nothing until the client goes
  slow BYTES         read the body at BYTES a second (an upload under way for a while), a
                     "began" line recorded first; a body read whole is then answered as usual
Record: DIR/received.jsonl, a JSON line per request: method, path, the body's size and
SHA-256 (complete requests only), the status answered, and the fault applied.
"""

import argparse
import email.utils
import hashlib
import json
import os
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Set by serve(): the parsed arguments.
    options = None
    lock = threading.Lock()

    # A fake logs nothing of a request (its Authorization header is a key).
    def log_message(self, format, *args):
        pass

    def state_path(self, name):
        return os.path.join(self.options.state, name)

    def take_fault(self):
        """The next fault line, removed from DIR/faults; None when there is none."""
        with FakeHandler.lock:
            path = self.state_path("faults")
            try:
                with open(path) as file:
                    lines = [line.strip() for line in file if line.strip()]
            except FileNotFoundError:
                return None
            if not lines:
                return None
            with open(path + ".new", "w") as file:
                file.write("".join(line + "\n" for line in lines[1:]))
            os.replace(path + ".new", path)
            return lines[0]

    def record(self, **fields):
        with FakeHandler.lock:
            with open(self.state_path("received.jsonl"), "a") as file:
                file.write(json.dumps(fields) + "\n")

    def read_body(self):
        if getattr(self, "slow_body", None) is not None:
            body, self.slow_body = self.slow_body, None
            return body
        length = int(self.headers.get("Content-Length") or 0)
        body = b""
        while len(body) < length:
            chunk = self.rfile.read(length - len(body))
            if not chunk:
                break
            body += chunk
        return body

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def answer_json(self, status, value, headers=()):
        self.answer(status, json.dumps(value).encode(), [("Content-Type", "application/json")] + list(headers))

    def apply_fault(self):
        """Applies the next fault, if any: True when it answered (or dropped) the request."""
        self.now = None
        self.slow_body = None
        fault = self.take_fault()
        if fault is None:
            return False
        words = fault.split()
        if words[0] == "slow":
            return self.read_slowly(fault, max(1, int(words[1])))
        if words[0] == "drop":
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length // 2)
            self.record(method=self.command, path=self.path, fault="drop", complete=False)
            self.close_connection = True
            # An abrupt close (RST), as a dropped network leaves a client.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
            return True
        body = self.read_body()
        if words[0] == "silent":
            self.record(method=self.command, path=self.path, fault="silent", size=len(body))
            # Until the client gives up (its low-speed limit, its stop) and closes.
            self.connection.settimeout(120)
            try:
                while self.connection.recv(1):
                    pass
            except (OSError, ssl.SSLError):
                pass
            self.close_connection = True
            return True
        if words[0] in ("429", "429-date"):
            seconds = int(words[1])
            self.now = time.time()
            retry_after = str(seconds) if words[0] == "429" else email.utils.formatdate(self.now + seconds, usegmt=True)
            self.record(method=self.command, path=self.path, fault=fault, status=429, size=len(body))
            self.answer_json(429, {"status": 429, "error": "Too many requests"},
                             [("Retry-After", retry_after)])
            return True
        if words[0] == "redirect":
            self.record(method=self.command, path=self.path, fault="redirect", status=307, size=len(body))
            self.answer(307, b"", [("Location", words[1])])
            return True
        status = int(words[0])
        self.record(method=self.command, path=self.path, fault=fault, status=status, size=len(body))
        self.answer_json(status, {"status": status, "error": "Server error"})
        return True

    def read_slowly(self, fault, rate):
        """The body read `rate` bytes a second, kept for the handler (False: it answers); a
        body cut short (the client gone) is recorded incomplete and answered by nobody (True)."""
        self.record(method=self.command, path=self.path, fault=fault, began=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = b""
        while len(body) < length:
            chunk = self.rfile.read(min(rate, length - len(body)))
            if not chunk:
                break
            body += chunk
            if len(body) < length:
                time.sleep(1)
        if len(body) < length:
            self.record(method=self.command, path=self.path, fault=fault, complete=False, size=len(body))
            self.close_connection = True
            return True
        self.slow_body = body
        return False

    def date_time_string(self, timestamp=None):
        # A 429-date's Retry-After is counted from the reply's own Date: the same instant.
        return super().date_time_string(timestamp if timestamp is not None else getattr(self, "now", None))

    def finish(self):
        # A dropped connection has nothing left to flush.
        try:
            super().finish()
        except (OSError, ValueError):
            pass


def arguments(description, extra):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True, help="the server's certificate chain (PEM)")
    parser.add_argument("--key", required=True, help="the certificate's key (PEM)")
    parser.add_argument("--state", required=True, help="the faults, the record and the stored files")
    extra(parser)
    return parser.parse_args()


def serve(handler, options):
    handler.options = options
    os.makedirs(options.state, exist_ok=True)
    server = ThreadingHTTPServer((options.host, options.port), handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(options.cert, options.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    with open(os.path.join(options.state, "port.new"), "w") as file:
        file.write(f"{port}\n")
    os.replace(os.path.join(options.state, "port.new"), os.path.join(options.state, "port"))
    print(f"listening on {options.host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
