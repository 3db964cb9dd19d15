"""What both browser suites share (tools/browser-test for Chromium, tools/webkit-test for WebKitGTK): the echo origin
that records every request exactly as it arrived, the probe app's cases and expectations, the multipart parser and
the screenshot check. The check report and the rest of the plumbing are tools/lib/satchel_tools.py's (on the path
before this folder)."""

import base64
import hashlib
import http.server
import json
import socketserver
import struct
import sys
import threading
import time
import urllib.parse
import zlib

from satchel_tools import ROOT

PROBE_FOLDER = ROOT / "tools" / "browser" / "probe"
SHOP, DOCS, PROBE = "m.shop.example", "docs.example", "probe.example"


def note(text):
    print(f"# {text}", flush=True)


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.disconnects = {}  # case -> time the client went away mid-answer
        self.counts = {}  # /cache/<name> -> how often the origin answered it

    def add(self, record):
        with self.lock:
            self.requests.append(record)

    def clear(self):
        with self.lock:
            self.requests = []
            self.disconnects = {}
            self.counts = {}

    def find(self, case):
        """The requests for /echo/<case> (any query)."""
        with self.lock:
            return [r for r in self.requests if urllib.parse.urlsplit(r["path"]).path == "/echo/" + case]

    def wait(self, case, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.find(case)
            if found:
                return found[-1]
            time.sleep(0.05)
        return None


def header(record, name):
    for key, value in record["headers"]:
        if key.lower() == name.lower():
            return value
    return None


def make_echo_handler(recorder, serve_probe_in_origin_form=False):
    """An HTTP handler class recording into `recorder`. Besides /echo/<case> (records, answers with the body's length
    and sha256) it has what the WebKit suite needs of a misbehaving origin: /slow/<case> (an answer that never ends, a
    chunk every 50 ms), /stall/<case> (no answer at all), /set-cookie, /redirect?to=…, /status/<case> (has
    <case> arrived, did its client go away?), and for the HTTP cache /cache/<name>[.svg]?cc=<Cache-Control> (an answer numbered by how
    often the origin was asked, with ETag "v1" answered 304 when the request carries it, unless etag=0)."""

    class EchoHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def read_body(self):
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                body = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return body
                    body += self.rfile.read(size)
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def handle_any(self):
            body = self.read_body()
            target = urllib.parse.urlsplit(self.path)
            origin_form = target.path + (f"?{target.query}" if target.query else "")
            served_probe = target.scheme and target.hostname == PROBE
            if (served_probe or (serve_probe_in_origin_form and not target.scheme)) and self.command == "GET" and not target.path.startswith(("/echo/", "/slow/", "/stall/", "/status/", "/set-cookie", "/redirect", "/cache/")):
                file = PROBE_FOLDER / (target.path.lstrip("/") or "index.html")
                if file.is_file() and PROBE_FOLDER in file.resolve().parents:
                    kind = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8"}.get(file.suffix[1:], "application/octet-stream")
                    return self.reply(200, file.read_bytes(), kind)
                return self.reply(404, b"not served here\n", "text/plain")
            if target.scheme and not served_probe:
                return self.reply(404, b"not served here\n", "text/plain")
            recorder.add({"method": self.command, "path": origin_form, "headers": [(k, v) for k, v in self.headers.items()], "body": body, "time": time.monotonic()})
            path = target.path
            if path.startswith("/slow/"):
                return self.slow(path[6:])
            if path.startswith("/cache/"):
                query = urllib.parse.parse_qs(target.query)
                return self.cacheable(path[7:], query.get("cc", ["no-store"])[0], query.get("etag", ["1"])[0] == "1")
            if path.startswith("/stall/"):
                return self.stall(path[7:])
            if path.startswith("/status/"):
                case = path[8:]
                with recorder.lock:
                    gone = case in recorder.disconnects
                    arrived = any(urllib.parse.urlsplit(r["path"]).path in ("/slow/" + case, "/stall/" + case) for r in recorder.requests)
                return self.reply(200, json.dumps({"clientGone": gone, "arrived": arrived}).encode(), "application/json")
            if path == "/set-cookie":
                payload = b"cookie set\n"
                self.send_response(200)
                self.send_header("Set-Cookie", "satchel_session=abc123; Path=/")
                self.send_header("Set-Cookie", "satchel_pref=ocean; Path=/; Max-Age=3600")
                self.send_header("Set-Cookie", "satchel_secret=s3; Path=/; HttpOnly")
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                return self.wfile.write(payload)
            if path == "/redirect":
                to = urllib.parse.parse_qs(target.query).get("to", ["/echo/redirected"])[0]
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            digest = hashlib.sha256(body).hexdigest()
            if path.startswith("/echo/form-"):
                page = (f'<!doctype html><html><head><meta charset="utf-8"><title>echo {path}</title></head>'
                        f'<body data-echo="{path[6:]}" data-length="{len(body)}" data-sha256="{digest}">received {len(body)} bytes</body></html>')
                self.reply(200, page.encode(), "text/html; charset=utf-8")
            else:
                self.reply(200, json.dumps({"method": self.command, "length": len(body), "sha256": digest, "cookie": self.headers.get("Cookie")}).encode(), "application/json")

        def slow(self, case):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8" if case.endswith("page") else "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            deadline = time.monotonic() + 60
            try:
                while time.monotonic() < deadline:
                    chunk = (b"<p>still streaming</p>\n" if case.endswith("page") else b"x" * 1024)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                with recorder.lock:
                    recorder.disconnects[case] = time.monotonic()

        def stall(self, case):
            # Never answers; notices the client leaving by the socket becoming readable at EOF.
            self.connection.settimeout(0.1)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if self.connection.recv(1) == b"":
                        with recorder.lock:
                            recorder.disconnects[case] = time.monotonic()
                        return
                except (TimeoutError, OSError) as error:
                    if not isinstance(error, TimeoutError) and "timed out" not in str(error):
                        with recorder.lock:
                            recorder.disconnects[case] = time.monotonic()
                        return

        def cacheable(self, name, cache_control, etag):
            with recorder.lock:
                count = recorder.counts[name] = recorder.counts.get(name, 0) + 1
            if etag and self.headers.get("If-None-Match") == '"v1"':
                self.send_response(304)
                self.send_header("ETag", '"v1"')
                self.send_header("Cache-Control", cache_control)
                self.end_headers()
                return
            if name.endswith(".svg"):
                payload = b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="#2a6"/></svg>'
                kind = "image/svg+xml"
            else:
                payload = json.dumps({"name": name, "n": count}).encode()
                kind = "application/json"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Cache-Control", cache_control)
            if etag:
                self.send_header("ETag", '"v1"')
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            self.wfile.write(payload)

        def reply(self, status, payload, content_type):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_any

    return EchoHandler


class EchoServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):  # a browser dropping a connection is no news
            super().handle_error(request, client_address)


# What the probe page sends (tools/browser/probe).
MULTIPART_FILE = bytes(range(256)) * 4 + b"\r\n--not-the-boundary\r\n\x00\xff end"
MULTIPART_FILE_NAME = "probe-upload ü.bin"
URLENCODED_EXPECTED = [
    ("name", "Zoë & Co = 100% + more"), ("city", "東京 / São Paulo"), ("symbols", "a+b=c&d%20e?f#g"), ("emoji", "🎒 👜"),
    ("empty", ""), ("name", "second value, same name"), ("note", "line one\r\nline two · ünïcode"),
    ("attachment", ""), ("action", "place order"),
]
SUBMIT_METHOD_EXPECTED = [("via", "form.submit() — no submit event"), ("plus", "1+1=2")]
MULTIPART_EXPECTED_FIELDS = [("title", "Ünïcode title · 名前"), ("quote", 'a "quoted" value; with semicolon'), ("note", "line one\r\nline two"), ("action", "upload")]

# The channel that must restore each case (see BodyChannel in Sources/SatchelCore/HTTP/BodyRestorer.swift).
HEADER, FORM_QUERY, BODY_STORE = "header", "form-query", "body-store"
EXPECTED_CHANNEL = {
    "xhr-text": HEADER, "xhr-json": HEADER, "xhr-unicode": HEADER, "xhr-put": HEADER, "xhr-binary": BODY_STORE,
    "xhr-arraybuffer": BODY_STORE, "xhr-large-text": BODY_STORE, "fetch-text": HEADER, "fetch-json": HEADER,
    "fetch-unicode": HEADER, "fetch-binary": BODY_STORE, "fetch-blob": BODY_STORE, "fetch-urlsearchparams": HEADER,
    "fetch-request-object": BODY_STORE, "fetch-patch": HEADER, "fetch-5mb": BODY_STORE, "fetch-formdata-file": BODY_STORE, "beacon-text": HEADER,
    "beacon-blob": BODY_STORE, "beacon-unload": HEADER, "form-urlencoded": FORM_QUERY, "form-submit-method": FORM_QUERY, "form-multipart": BODY_STORE,
}
FORM_CASES = ["form-urlencoded", "form-submit-method", "form-multipart"]


def parse_multipart(body, content_type):
    """[(name, filename or None, part content type or None, bytes)] of a multipart/form-data body."""
    import re
    match = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', content_type or "")
    if not match:
        raise ValueError(f"no boundary in Content-Type {content_type!r}")
    delimiter = b"--" + (match.group(1) or match.group(2)).encode()
    segments = body.split(delimiter)
    if segments[0] != b"" or segments[-1] not in (b"--\r\n", b"--"):
        raise ValueError("body does not start and end with the boundary")
    parts = []
    for segment in segments[1:-1]:
        if not (segment.startswith(b"\r\n") and segment.endswith(b"\r\n")):
            raise ValueError("a part is not framed by CRLF")
        head, _, content = segment[2:-2].partition(b"\r\n\r\n")
        headers = {}
        for line in head.split(b"\r\n"):
            key, _, value = line.decode("utf-8").partition(":")
            headers[key.strip().lower()] = value.strip()
        disposition = headers.get("content-disposition", "")
        name = re.search(r'\bname="([^"]*)"', disposition)
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        parts.append((name.group(1) if name else None, filename.group(1) if filename else None, headers.get("content-type"), content))
    return parts


def body_problems(page, record, native, browser):
    """What is wrong with what reached the echo origin for one probe case, as a list (empty: nothing). `page` is what the
    probe meant to send (exact bytes, or the parts of a multipart body whose boundary only the browser knows), `record`
    what arrived, `native` what `browser` itself sent for the case without Satchel (None when not known)."""
    if record is None:
        return [f"nothing reached the echo origin (page saw {page.get('status')}: {str(page.get('response'))[:200]})"]
    problems = []
    got = record["body"]
    if page.get("parts") is not None:
        content_type = header(record, "Content-Type") or ""
        if not content_type.startswith("multipart/form-data; boundary="):
            problems.append(f"Content-Type {content_type!r}")
        try:
            parts = parse_multipart(got, content_type)
        except ValueError as error:
            return problems + [f"not multipart/form-data: {error}"]
        expected = [(name, filename, kind, base64.b64decode(content)) for name, filename, kind, content in page["parts"]]
        if parts != expected:
            problems.append(f"parts {[(n, f, t, len(c)) for n, f, t, c in parts]}, meant {[(n, f, t, len(c)) for n, f, t, c in expected]}")
        if native is not None and native["body"]:
            native_parts = parse_multipart(native["body"], header(native, "Content-Type"))
            if native_parts != parts:
                problems.append(f"parts differ from what {browser} itself sends: {[(n, f, t, len(c)) for n, f, t, c in native_parts]}")
    else:
        sent = base64.b64decode(page["sent"])
        if got != sent:
            first = next((i for i in range(min(len(got), len(sent))) if got[i] != sent[i]), min(len(got), len(sent)))
            problems.append(f"body differs: {len(got)} bytes (sha256 {hashlib.sha256(got).hexdigest()[:16]}) vs meant {len(sent)} "
                            f"(sha256 {hashlib.sha256(sent).hexdigest()[:16]}), first difference at byte {first}")
        if native is not None and native["body"] and header(record, "Content-Type") != header(native, "Content-Type"):
            problems.append(f"Content-Type {header(record, 'Content-Type')!r}, {browser} itself sends {header(native, 'Content-Type')!r}")
    if record["method"] != page["method"]:
        problems.append(f"method {record['method']} instead of {page['method']}")
    if page.get("status") not in (200, "queued"):
        problems.append(f"the page saw status {page.get('status')}")
    leaked = [k for k, _ in record["headers"] if k.lower().startswith("x-satchel")]
    if leaked:
        problems.append(f"satchel headers reached the origin: {leaked}")
    return problems


def multipart_form_problems(record, reference, browser):
    """What is wrong with the probe's multipart form submission (fields, the file, and the parts the browser itself sends)."""
    if record is None:
        return ["nothing reached the echo origin"]
    parts = parse_multipart(record["body"], header(record, "Content-Type"))
    problems = []
    fields = [(n, c.decode("utf-8")) for n, f, t, c in parts if f is None]
    files = [(n, f, t, c) for n, f, t, c in parts if f is not None]
    if fields != MULTIPART_EXPECTED_FIELDS:
        problems.append(f"fields {fields}")
    if len(files) != 1 or files[0][0] != "upload" or files[0][1] != MULTIPART_FILE_NAME or files[0][3] != MULTIPART_FILE:
        problems.append(f"file parts {[(n, f, t, len(c)) for n, f, t, c in files]}")
    if reference is not None:
        native_parts = parse_multipart(reference["body"], header(reference, "Content-Type"))
        if native_parts != parts:
            problems.append(f"parts differ from what {browser} itself sends: {[(n, f, t, len(c)) for n, f, t, c in native_parts]}")
    if record["method"] != "POST" or record["path"] != "/echo/form-multipart":
        problems.append(f"{record['method']} {record['path']}")
    return problems


def png_facts(data):
    """(width, height, distinct colours in a sample) of a PNG, checked structurally (Pillow when present)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG signature")
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", data[16:29])
    try:
        from PIL import Image
        import io
        image = Image.open(io.BytesIO(data)).convert("RGB")
        return width, height, len(image.getcolors(maxcolors=1 << 20) or [None] * (1 << 20))
    except ImportError:
        chunks, offset = [], 8
        while offset < len(data):
            length = struct.unpack(">I", data[offset:offset + 4])[0]
            if data[offset + 4:offset + 8] == b"IDAT":
                chunks.append(data[offset + 8:offset + 8 + length])
            offset += 12 + length
        raw = zlib.decompress(b"".join(chunks))
        channels = {2: 3, 6: 4, 0: 1, 4: 2}[colour_type]
        if len(raw) != height * (1 + width * channels * depth // 8):
            raise ValueError("IDAT does not inflate to the declared size")
        return width, height, len(set(raw[::97]))
