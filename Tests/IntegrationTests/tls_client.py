#!/usr/bin/env python3
"""A phone's browser over TLS, played by Python's ssl module (OpenSSL's client, not the server's
code): trusts the board's self-signed certificate only after reading its fingerprint, then
pairs with CODE, reads the status with the cookie it got, and tries control from a plain-HTTP
origin. Prints one JSON object for WebServerTests.

Usage: tls_client.py PORT CODE
       tls_client.py PORT --get PATH   (one GET: its status and Retry-After)
"""
import hashlib
import json
import socket
import ssl
import sys


def exchange(port, request):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=15)) as tls:
        served = hashlib.sha256(tls.getpeercert(binary_form=True)).digest()
        tls.sendall(request.encode())
        reply = b""
        while chunk := tls.recv(65536):
            reply += chunk
        return ":".join(f"{b:02X}" for b in served), tls.version(), reply.decode(errors="replace")


def call(port, method, path, headers=(), body=None):
    text = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
    for name, value in headers:
        text += f"{name}: {value}\r\n"
    if body is not None:
        text += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    fingerprint, version, reply = exchange(port, text + "\r\n" + (body or ""))
    head, _, rest = reply.partition("\r\n\r\n")
    lines = head.split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return {"fingerprint": fingerprint, "version": version, "status": int(lines[0].split()[1]), "headers": fields,
            "body": rest}


def main():
    port, code = int(sys.argv[1]), sys.argv[2]
    if code == "--get":
        got = call(port, "GET", sys.argv[3])
        print(json.dumps({"status": got["status"], "retryAfter": got["headers"].get("retry-after"),
                          "body": got["body"][:200]}))
        return
    origin = f"https://127.0.0.1:{port}"
    paired = call(port, "POST", "/api/pair", [("Origin", origin)], json.dumps({"code": code, "name": "tls client"}))
    cookie = paired["headers"].get("set-cookie", "")
    token = cookie.split(";")[0]
    status = call(port, "GET", "/api/status", [("Cookie", token)])
    # The same host and port as a plain http:// page: another origin to an HTTPS page.
    plain_origin = call(port, "POST", "/api/control", [("Origin", f"http://127.0.0.1:{port}"), ("Cookie", token)],
                        json.dumps({"command": "stop"}))
    print(json.dumps({"fingerprint": paired["fingerprint"], "version": paired["version"], "pair": paired["status"],
                      "cookie": cookie, "token": token.partition("=")[2], "status": status["status"],
                      "state": json.loads(status["body"]).get("state") if status["status"] == 200 else None,
                      "plainOrigin": plain_origin["status"]}))


if __name__ == "__main__":
    main()
