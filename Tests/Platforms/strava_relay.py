#!/usr/bin/env python3
"""Runs fake_strava.py on a throwaway certificate and relays requests to it over verified TLS,
one JSON line each way, so that a test can drive a conversation against the fake before the
project's own HTTP client exists to.

stdin, first line: the fake's setup (see fake_strava.py). stdout, first line:
{"base": "https://127.0.0.1:PORT", "state": DIR}. Then each stdin line is a request,
{"method", "url", "headers": [[name, value]...], "body": base64}, and each stdout line its
reply, {"status", "headers": [[name, value]...], "body": base64}, or {"unreachable": words}
when the connection dropped. End of stdin stops the fake.
"""

import base64
import http.client
import json
import os
import ssl
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_fake_strava import Fake  # noqa: E402


def relay(fake, line):
    request = json.loads(line)
    url = urllib.parse.urlsplit(request["url"])
    path = url.path + ("?" + url.query if url.query else "")
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=fake.context, timeout=10)
    try:
        connection.request(request["method"], path, body=base64.b64decode(request["body"]),
                           headers=dict(request["headers"]))
        response = connection.getresponse()
        body = response.read()
        return {"status": response.status, "headers": [list(h) for h in response.getheaders()],
                "body": base64.b64encode(body).decode()}
    except (http.client.HTTPException, ConnectionError, ssl.SSLError, OSError) as error:
        return {"unreachable": "%s: %s" % (type(error).__name__, error)}
    finally:
        connection.close()


def main():
    setup = json.loads(sys.stdin.readline())
    with tempfile.TemporaryDirectory() as workdir:
        fake = Fake(workdir, setup)
        try:
            print(json.dumps({"base": "https://127.0.0.1:%d" % fake.port, "state": fake.state}), flush=True)
            for line in sys.stdin:
                if line.strip():
                    print(json.dumps(relay(fake, line)), flush=True)
        finally:
            fake.stop()


if __name__ == "__main__":
    main()
