#!/usr/bin/env python3
"""A local origin for the network fallback tests. Prints its port on the first line, then serves:
  /echo      JSON {method, path, headers, body (base64)} of the request
  /redirect  302 to /echo
  /stall     accepts, then says nothing for 30 s
  /garbage   answers with bytes that are not HTTP
  /reset     closes the connection at once (RST)
  /big?n=N   N bytes of a repeating pattern, streamed in 64 KiB writes
  /hang[?seconds=S]  holds the response open for S seconds (10), 10 bytes every 50 ms, noting in /events when the
             client goes away
  /events    JSON list of every request seen ("seen: METHOD target") and of what happened on /hang
  /cookies   two Set-Cookie fields and a field repeated three times, with Content-Length
  /drip?n=N&seconds=S   the head at once, then N bytes spread evenly over S seconds (Content-Length N)
  /late?ms=M the head only after M milliseconds
  /nolength?n=N         N bytes with no Content-Length (the body ends when the connection closes)
  /conn[?ms=M]  the client's port: which connection carried the request (after M milliseconds)
  /early     413 with the client's port at once, without reading the request's body (an upload refused early),
             then 1.5 s without reading anything
  /once      answers the first request on a connection; a later one on the same connection is read, then the
             connection closes unanswered (an origin that timed the idle connection out as the request came)
  /bye       answers (keep-alive), then closes the idle connection 200 ms later
  /upgrade   101 Switching Protocols nobody asked for, then serves the connection on as HTTP
  /headbody  200 with Content-Length 5 and the 5 bytes, also to a HEAD (a body where none may be)
  /cached/<name>?status=S&h=Name:Value&h=...&size=N&seed=K&pace=MS   an answer for a cache to keep: status S
             (200), the given header fields, and N bytes of the pattern (b + K) mod 256 (default: the text
             "<name> #<count>"), in 64 KiB writes MS milliseconds apart; X-Origin-Count says how many requests for that target the origin has seen.
             An If-None-Match equal to its ETag gets a 304 with the same fields.
  /origin-mode?fail=503|reset|   from now on /cached/... answers 503, or closes the connection, or works again
  /origin-mode?now=SECONDS|   from now on every Date field says that time (seconds since 1970), or the real time again:
             a test that moves a cache's clock moves the origin's with it
With `--tls CERT KEY` it speaks https. It stops when its standard input closes, so a test that dies cannot
leave it running."""
import base64, http.server, json, socket, socketserver, ssl, struct, sys, threading, time

events = []
counts = {}
failing = {"mode": ""}
clock = {"now": None}

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def date_time_string(self, timestamp=None):
        if timestamp is None and clock["now"] is not None:
            timestamp = clock["now"]
        return super().date_time_string(timestamp)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(self, status, body, content_type="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        path = self.path.split("?")[0]
        if path != "/events":
            events.append("seen: %s %s" % (self.command, self.path))
        if path == "/echo":
            payload = {"method": self.command, "path": self.path, "headers": [[k, v] for k, v in self.headers.items()], "body": base64.b64encode(self.body()).decode()}
            self.send(200, json.dumps(payload).encode(), extra=[("Set-Cookie", "seen=1")])
        elif path == "/redirect":
            self.send(302, b"", "text/plain", [("Location", "/echo")])
        elif path == "/stall":
            time.sleep(30)
        elif path == "/garbage":
            self.wfile.write(b"THIS IS NOT HTTP\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif path == "/reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        elif path == "/big":
            n = int(self.path.split("n=")[1])
            events.append("big: started")
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = bytes(range(256)) * 256
            sent = 0
            while sent < n:
                chunk = block[: min(len(block), n - sent)]
                try:
                    self.wfile.write(chunk)
                except OSError:
                    events.append("big: client went away after %d bytes" % sent)
                    return
                sent += len(chunk)
            events.append("big: finished")
        elif path == "/hang":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            events.append("hang: started")
            seconds = float(self.path.split("seconds=")[1]) if "seconds=" in self.path else 10
            for _ in range(int(seconds * 20)):
                try:
                    self.wfile.write(b"x" * 10)
                    self.wfile.flush()
                except OSError:
                    events.append("hang: client went away")
                    return
                time.sleep(0.05)
            events.append("hang: finished")
        elif path == "/cookies":
            body = b"two cookies"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Set-Cookie", "a=1; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly")
            self.send_header("X-Repeated", "first")
            self.send_header("Set-Cookie", "b=2; Path=/")
            self.send_header("X-Repeated", "second")
            self.send_header("X-Repeated", "third, with a comma")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path == "/drip":
            query = dict(part.split("=") for part in self.path.split("?", 1)[1].split("&"))
            n, seconds = int(query["n"]), float(query["seconds"])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            self.wfile.flush()
            for index in range(n):
                time.sleep(seconds / n)
                try:
                    self.wfile.write(bytes([0x41 + index % 26]))
                    self.wfile.flush()
                except OSError:
                    events.append("drip: client went away")
                    return
        elif path == "/late":
            time.sleep(int(self.path.split("ms=")[1]) / 1000)
            self.send(200, b"late", "text/plain")
        elif path == "/nolength":
            n = int(self.path.split("n=")[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(bytes(range(256)) * (n // 256) + bytes(range(n % 256)))
            self.close_connection = True
        elif path == "/early":
            self.send(413, str(self.client_address[1]).encode(), "text/plain")
            # Keeps the connection open, reading nothing, for a while: a client that reused it would wait here.
            time.sleep(1.5)
        elif path == "/conn":
            if "ms=" in self.path:
                time.sleep(int(self.path.split("ms=")[1]) / 1000)
            self.send(200, str(self.client_address[1]).encode(), "text/plain")
        elif path == "/once":
            body = self.body()
            if getattr(self, "served_once", False):
                events.append("once: dropped %s" % self.command)
                self.close_connection = True
                return
            self.served_once = True
            self.send(200, b"first", "text/plain")
        elif path == "/bye":
            self.send(200, b"bye", "text/plain")
            self.wfile.flush()
            connection = self.connection
            threading.Timer(0.2, lambda: connection.shutdown(socket.SHUT_RDWR)).start()
        elif path == "/upgrade":
            self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x-unasked\r\nConnection: Upgrade\r\n\r\n")
            self.wfile.flush()
        elif path == "/headbody":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
            self.wfile.flush()
        elif path == "/events":
            self.send(200, json.dumps(events).encode())
        elif path == "/origin-mode":
            from urllib.parse import parse_qs
            query = parse_qs(self.path.split("?", 1)[1], keep_blank_values=True) if "?" in self.path else {}
            if "fail" in query:
                failing["mode"] = query["fail"][0]
            if "now" in query:
                clock["now"] = float(query["now"][0]) if query["now"][0] else None
            self.send(204, b"", "text/plain")
        elif path.startswith("/cached/"):
            self.cached(path)
        else:
            self.send(404, b"not found", "text/plain")

    def cached(self, path):
        from urllib.parse import parse_qs
        self.body()
        counts[self.path] = counts.get(self.path, 0) + 1
        if failing["mode"] == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if failing["mode"] == "503":
            self.send(503, b"down", "text/plain", [("X-Origin-Count", str(counts[self.path]))])
            return
        query = parse_qs(self.path.split("?", 1)[1]) if "?" in self.path else {}
        status = int(query.get("status", ["200"])[0])
        fields = [tuple(h.split(":", 1)) for h in query.get("h", [])]
        fields.append(("X-Origin-Count", str(counts[self.path])))
        etag = next((v for k, v in fields if k.lower() == "etag"), None)
        if etag is not None and self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            for name, value in fields:
                self.send_header(name, value)
            self.end_headers()
            return
        size = int(query.get("size", ["-1"])[0])
        pace = int(query.get("pace", ["0"])[0]) / 1000
        text = ("%s #%d" % (path[len("/cached/"):], counts[self.path])).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if size < 0 else "application/octet-stream")
        self.send_header("Content-Length", str(len(text) if size < 0 else size))
        for name, value in fields:
            self.send_header(name, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        if size < 0:
            self.wfile.write(text)
            return
        seed = int(query.get("seed", ["0"])[0])
        pattern = bytes((b + seed) % 256 for b in range(256)) * 256
        sent = 0
        try:
            while sent < size:
                chunk = pattern[: min(len(pattern), size - sent)]
                self.wfile.write(chunk)
                self.wfile.flush()
                sent += len(chunk)
                if pace:
                    time.sleep(pace)
        except (BrokenPipeError, ConnectionResetError):
            events.append("cached: client went away at %d" % sent)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_TRACE = do_OPTIONS = handle_any

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

server = Server(("127.0.0.1", 0), Handler)
if len(sys.argv) == 4 and sys.argv[1] == "--tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()  # until the test closes our stdin
