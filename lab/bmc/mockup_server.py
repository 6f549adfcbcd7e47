#!/usr/bin/env python3
"""Serve a DMTF Redfish mockup folder read-only (GET only), optionally over TLS.

    python lab/bmc/mockup_server.py --mockup ../shared/fixtures/redfish-mockups/public-tower \
        --address 127.0.10.200 --port 8443 --cert server.pem --key server.key

Paths map to ``<mockup>/<path below /redfish/v1>/index.json``; anything else is 404, any
other method 405. No auth: the mockups describe hardware, not a live BMC.
"""
import argparse
import json
import os
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_handler(root):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = self.path.split("?", 1)[0].rstrip("/")
            if not (path == "/redfish/v1" or path.startswith("/redfish/v1/")) or ".." in path:
                return self._send(404, {"error": {"message": "not found"}})
            rel = path[len("/redfish/v1"):].lstrip("/")
            file_path = os.path.join(root, rel, "index.json")
            if not os.path.isfile(file_path):
                return self._send(404, {"error": {"message": "%s not in mockup" % path}})
            with open(file_path) as handle:
                return self._send(200, json.load(handle))

        def _refuse(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self._send(405, {"error": {"message": "read-only mockup"}})

        do_POST = do_PATCH = do_PUT = do_DELETE = _refuse

    return Handler


def serve(mockup, address, port, cert=None, key=None):
    server = ThreadingHTTPServer((address, port), make_handler(os.path.abspath(mockup)))
    server.daemon_threads = True
    if cert and key:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mockup", required=True)
    parser.add_argument("--address", default="127.0.10.200")
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args(argv)
    serve(args.mockup, args.address, args.port, args.cert, args.key).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
