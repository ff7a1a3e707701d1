"""A tiny upstream for the Envoy test: answers 200 to everything; binds port 0 and writes the
port to the file named by argv[1]."""
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"upstream ok\n"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os

os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
