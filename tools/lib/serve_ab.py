#!/usr/bin/env python3
"""The A/B part of tools/bench-proxy and tools/bench-serve (--baseline COMMIT): `satchel serve` as built today against
the same server built from an older commit, same arguments, same files, same run.

  serve_ab.py older COMMIT
      prints the path of COMMIT's release satchel (built once into .build-older/COMMIT, a few minutes)
  serve_ab.py run --tool NAME --new BINARY --old BINARY --label COMMIT --work DIR
                  --case NAME PATH FILE LABEL [--case ...] [--check PATH REGEX ...] [--prepare COMMAND]
                  [--pairs N] [--seconds N] [--threads N] [--connections N]
                  [--callgrind CASE] [--callgrind-requests N] [--callgrind-warmup N] [--result FILE]
                  -- SERVE ARGUMENTS

`run` starts both servers (`satchel serve SERVE ARGUMENTS`, `{dir}` in them replaced by a folder of each side's own,
after `--prepare`'s command has run there with `{satchel}` and `{dir}` filled in), checks that both answer every case's
path with the bytes of its FILE (and each --check path with a header matching REGEX), then runs wrk keep-alive against
the two in turns: N pairs, the order within a pair alternating (old-new, new-old, ...), each case's two runs next to
each other, each `--seconds` long and after a pause and a short untimed run of its own. Per case: every pair's ratio
new/old in requests per second, their median and range. Then, with --callgrind CASE, instructions per request for that case: each binary (a copy without debug
information, which valgrind 3.19 cannot read) runs under callgrind with instrumentation off, is warmed up, has
instrumentation switched on (callgrind_control -i on) and its counters zeroed, answers a fixed number of requests over
one keep-alive connection, and is dumped: total Ir / requests. Prints a table; writes the RESULT keys
(`ab_<case>_median=…`) to --result. A server that does not start, or answers wrongly, stops the run (exit 1).
"""
import argparse
import atexit
import glob
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from satchel_tools import older_satchel, stop_server  # noqa: E402

_processes = []


def _stop_all():
    for process in _processes:
        if process.poll() is None:
            stop_server(process)


atexit.register(_stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that atexit stops the servers


class Failure(Exception):
    pass


# libdispatch's signal thread calls sigsuspend with a `static const` mask, and valgrind 3.19 writes into the mask it is
# given (to take its own signal out): a fault inside valgrind. This preload passes sigsuspend a copy on the stack.
SIGSUSPEND_SHIM = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, (size_t)8);
}
"""


class Side:
    """One binary under test: `new` (today's) or `old` (the baseline's)."""

    def __init__(self, key, binary, label):
        self.key, self.binary, self.label = key, binary, label
        self.process = None
        self.url = None


def fill(text, **values):
    for name, value in values.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def start(side, folder, options, callgrind=None):
    """Starts `satchel serve` for `side` in `folder` (its own store, cache...), optionally under callgrind (callgrind is
    then (binary copy, shim)); returns once it says where it listens, or raises Failure with what it printed."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    binary = callgrind[0] if callgrind else side.binary
    if options.prepare:
        command = [fill(a, satchel=side.binary, dir=folder) for a in shlex.split(options.prepare)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise Failure(f"preparing {side.label} failed ({' '.join(command)}, exit {result.returncode}): "
                          f"{(result.stdout + result.stderr).strip()[-1500:]}")
    command = [str(binary), "serve", *(fill(a, dir=folder) for a in options.serve)]
    env = None
    what = f"satchel serve {side.label}"
    timeout = 20
    if callgrind:
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={folder}/callgrind.out",
                   *command]
        env = dict(os.environ, LD_PRELOAD=str(callgrind[1]))
        what += " under callgrind"
        timeout = 180
    out, err = folder / "serve.out", folder / "serve.err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
    _processes.append(process)
    deadline = time.monotonic() + timeout
    while True:
        text = out.read_text(errors="replace")
        if text.startswith("listening on http://") and "\n" in text:
            side.process, side.url = process, text.split("\n", 1)[0][len("listening on "):].strip()
            return
        if process.poll() is not None:
            raise Failure(f"{what} did not start: it exited with status {process.returncode}\n  command: "
                          f"{' '.join(command)}\n  stderr: {err.read_text(errors='replace').strip()[-1500:] or '(empty)'}")
        if time.monotonic() > deadline:
            process.kill()
            raise Failure(f"{what} did not start: no 'listening on http://...' line after {timeout} s\n  command: "
                          f"{' '.join(command)}\n  stderr: {err.read_text(errors='replace').strip()[-1500:] or '(empty)'}")
        time.sleep(0.1)


def stop(side):
    if side.process and side.process.poll() is None:
        stop_server(side.process)
    side.process = None


class Connection:
    """One keep-alive HTTP/1.1 connection: get(path) -> (status, head text, body)."""

    def __init__(self, url):
        parsed = urllib.parse.urlparse(url)
        self.netloc = parsed.netloc
        self.sock = socket.create_connection((parsed.hostname, parsed.port), timeout=120)
        self.buffer = b""

    def _fill(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise Failure("the server closed the connection")
        self.buffer += data

    def _line(self):
        while b"\r\n" not in self.buffer:
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _take(self, count):
        while len(self.buffer) < count:
            self._fill()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def get(self, path):
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.netloc}\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        text = head.decode("latin-1")
        status = int(text.split(" ", 2)[1])
        length = re.search(r"^content-length:\s*(\d+)", text, re.I | re.M)
        if length:
            return status, text, self._take(int(length.group(1)))
        if re.search(r"^transfer-encoding:.*chunked", text, re.I | re.M):
            body = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    return status, text, body
                body += self._take(size)
                self._take(2)
        return status, text, b""

    def close(self):
        self.sock.close()


def check(side, options):
    """Both servers must answer every case with its file's bytes, and every --check path with a header matching."""
    connection = Connection(side.url)
    try:
        for case in options.case:
            name, path, file, _ = case
            expected = Path(file).read_bytes()
            status, _, body = connection.get(path)
            if status != 200 or body != expected:
                raise Failure(f"satchel serve {side.label} answered {path} with {status} and {len(body)} bytes, "
                              f"not 200 and the {len(expected)} bytes of {file}")
        for path, pattern in options.check:
            status, head, _ = connection.get(path)
            if not re.search(pattern, head, re.I | re.M):
                raise Failure(f"satchel serve {side.label}: {path} has no header matching {pattern!r} (status {status}):\n{head}")
    finally:
        connection.close()


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wrk(side, path, seconds, options):
    """One wrk run: {rps, bps, errors, cpu_us} (errors: socket errors and non-2xx/3xx answers; CPU of the server)."""
    before = cpu_ticks(side.process.pid)
    result = subprocess.run(["wrk", f"-t{options.threads}", f"-c{options.connections}", f"-d{seconds}s", side.url + path],
                            capture_output=True, text=True)
    after = cpu_ticks(side.process.pid)
    text = result.stdout + result.stderr
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if result.returncode != 0 or not rps:
        raise Failure(f"wrk against satchel serve {side.label} ({side.url + path}) failed:\n{text.strip()}")
    if side.process.poll() is not None:
        raise Failure(f"satchel serve {side.label} exited (status {side.process.returncode}) during a run")
    transfer = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", text)
    scale = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}[transfer.group(2)]
    errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    requests = int(re.search(r"(\d+) requests in", text).group(1))
    return {"rps": float(rps.group(1)), "bps": float(transfer.group(1)) * scale,
            "errors": errors + (int(non2xx.group(1)) if non2xx else 0),
            "cpu_us": (after - before) / os.sysconf("SC_CLK_TCK") * 1e6 / max(requests, 1)}


def instructions_per_request(side, options, folder, shim):
    """Ir per request of `side` for the --callgrind case, under callgrind (see the module's description)."""
    case = next(c for c in options.case if c[0] == options.callgrind)
    folder.mkdir(parents=True, exist_ok=True)
    # A copy without debug information, beside its build folder's resource bundles.
    copy_folder = folder / f"bin-{side.key}"
    shutil.rmtree(copy_folder, ignore_errors=True)
    copy_folder.mkdir(parents=True)
    copy = copy_folder / "satchel"
    subprocess.run(["objcopy", "--strip-debug", str(side.binary), str(copy)], check=True)
    for bundle in Path(side.binary).parent.glob("*.resources"):
        (copy_folder / bundle.name).symlink_to(bundle)
    start(side, folder / f"run-{side.key}", options, callgrind=(copy, shim))
    try:
        connection = Connection(side.url)
        expected = Path(case[2]).read_bytes()
        for _ in range(options.callgrind_warmup):
            status, _, body = connection.get(case[1])
            if status != 200 or body != expected:
                raise Failure(f"satchel serve {side.label} under callgrind answered {case[1]} with {status}, {len(body)} bytes")
        control = ["callgrind_control"]
        for command in (["-i", "on"], ["-z"]):
            result = subprocess.run([*control, *command, str(side.process.pid)], capture_output=True, text=True)
            if result.returncode != 0 or "OK" not in result.stdout:
                raise Failure(f"callgrind_control {' '.join(command)} failed: {(result.stdout + result.stderr).strip()}")
        for _ in range(options.callgrind_requests):
            status, _, body = connection.get(case[1])
            if status != 200 or len(body) != len(expected):
                raise Failure(f"satchel serve {side.label} under callgrind answered {case[1]} with {status}, {len(body)} bytes")
        dumps = set(glob.glob(f"{folder}/run-{side.key}/callgrind.out*"))
        result = subprocess.run([*control, "-d", str(side.process.pid)], capture_output=True, text=True)
        connection.close()
        deadline = time.monotonic() + 30
        while True:
            new = sorted(set(glob.glob(f"{folder}/run-{side.key}/callgrind.out*")) - dumps)
            totals = [re.search(r"^totals:\s+(\d+)", Path(p).read_text(), re.M) for p in new]
            if totals and all(totals):
                return sum(int(t.group(1)) for t in totals) / options.callgrind_requests
            if time.monotonic() > deadline:
                raise Failure(f"callgrind_control -d wrote no dump with totals: {(result.stdout + result.stderr).strip()}")
            time.sleep(0.2)
    finally:
        stop(side)


def run(options):
    if not options.case:
        raise Failure("no --case")
    names = [c[0] for c in options.case]
    if options.callgrind and options.callgrind not in names:
        raise Failure(f"--callgrind {options.callgrind}: no such case ({', '.join(names)})")
    for tool in ["wrk"] + (["valgrind", "callgrind_control", "objcopy", "cc"] if options.callgrind else []):
        if not shutil.which(tool):
            raise Failure(f"{tool} is not installed")
    work = Path(options.work)
    work.mkdir(parents=True, exist_ok=True)
    label = options.label[:8]
    new, old = Side("new", options.new, "(today)"), Side("old", options.old, f"@{label}")
    sides = {"new": new, "old": old}
    for side in (old, new):
        start(side, work / f"ab-{side.key}", options)
    for side in (old, new):
        check(side, options)
    print(f"{options.tool}: A/B against {label}: {options.pairs} pairs, {options.seconds}s per run, cases "
          f"{', '.join(names)}; today {new.url}, {label} {old.url}", file=sys.stderr)
    for case in options.case:  # warm-up: connections, pools, caches, page cache
        for side in (old, new):
            wrk(side, case[1], min(2, options.seconds), options)
    runs = {(c[0], s): [] for c in options.case for s in sides}
    for pair in range(options.pairs):
        order = ["old", "new"] if pair % 2 == 0 else ["new", "old"]
        for case in options.case:
            for key in order:
                # Every timed run follows the same thing, a pause and a short untimed run of the same server on the
                # same case, rather than whatever ran before it (another server, a large file).
                time.sleep(0.5)
                wrk(sides[key], case[1], options.prime_seconds, options)
                runs[(case[0], key)].append(wrk(sides[key], case[1], options.seconds, options))
        ratios = " ".join(f"{c[0]} {runs[(c[0], 'new')][-1]['rps'] / runs[(c[0], 'old')][-1]['rps']:.3f}" for c in options.case)
        print(f"{options.tool}: A/B pair {pair + 1}/{options.pairs} ({'-'.join(order)}): {ratios}", file=sys.stderr)
    for side in (old, new):
        stop(side)

    instructions = {}
    if options.callgrind:
        shim_folder = work / "callgrind"
        shim_folder.mkdir(parents=True, exist_ok=True)
        (shim_folder / "sigsuspend-shim.c").write_text(SIGSUSPEND_SHIM)
        shim = shim_folder / "sigsuspend-shim.so"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(shim_folder / "sigsuspend-shim.c")], check=True)
        for side in (old, new):
            print(f"{options.tool}: A/B instructions per {options.callgrind} request, {side.label}, under callgrind...", file=sys.stderr)
            instructions[side.key] = instructions_per_request(side, options, shim_folder, shim)

    keys = [f"ab_baseline={label}", f"ab_pairs={options.pairs}"]
    print(f"\nA/B: satchel serve today against {label} (release builds, same arguments), {options.pairs} interleaved pairs "
          f"of {options.seconds}s wrk runs (order alternating), {options.threads} threads, {options.connections} keep-alive connections")
    print(f"{'case':<12}{'today':>12}{label:>12}{'median today/' + label:>23}{'range':>14}  {'goal':<18}"
          f"{'CPU us/req':>12}{'errors':>9}")
    for name, _, file, case_label in options.case:
        ratios = [n["rps"] / o["rps"] for n, o in zip(runs[(name, "new")], runs[(name, "old")])]
        med, low, high = statistics.median(ratios), min(ratios), max(ratios)
        rps_new = statistics.median(r["rps"] for r in runs[(name, "new")])
        rps_old = statistics.median(r["rps"] for r in runs[(name, "old")])
        cpu_new = statistics.median(r["cpu_us"] for r in runs[(name, "new")])
        cpu_old = statistics.median(r["cpu_us"] for r in runs[(name, "old")])
        errors_new = sum(r["errors"] for r in runs[(name, "new")])
        errors_old = sum(r["errors"] for r in runs[(name, "old")])
        goal = f">= {options.goal:.2f}: " + ("met" if med >= options.goal else "NOT met")
        size = os.path.getsize(file)
        if size >= 1 << 20:
            shown_new, shown_old = f"{rps_new * size / 1e6:.0f} MB/s", f"{rps_old * size / 1e6:.0f} MB/s"
        else:
            shown_new, shown_old = f"{rps_new:.0f} r/s", f"{rps_old:.0f} r/s"
        print(f"{case_label:<12}{shown_new:>12}{shown_old:>12}{med:>23.3f}{f'{low:.3f}-{high:.3f}':>14}  {goal:<18}"
              f"{f'{cpu_new:.0f}/{cpu_old:.0f}':>12}{f'{errors_new}/{errors_old}':>9}")
        print(f"  pairs (today/{label}, requests per second): {' '.join(f'{r:.3f}' for r in ratios)}")
        keys += [f"ab_{name}_median={med:.3f}", f"ab_{name}_min={low:.3f}", f"ab_{name}_max={high:.3f}",
                 f"ab_{name}_rps_new={rps_new:.0f}", f"ab_{name}_rps_old={rps_old:.0f}",
                 f"ab_{name}_cpu_us_new={cpu_new:.1f}", f"ab_{name}_cpu_us_old={cpu_old:.1f}",
                 f"ab_{name}_errors={errors_new}/{errors_old}"]
    if instructions:
        name = options.callgrind
        ratio = instructions["new"] / instructions["old"]
        goal = f"goal <= {options.goal_instructions:.2f}: " + ("met" if ratio <= options.goal_instructions else "NOT met")
        print(f"instructions per {name} request (callgrind Ir, the whole process, {options.callgrind_requests} requests over one "
              f"keep-alive connection after {options.callgrind_warmup} uncounted): today {instructions['new']:,.0f}, "
              f"{label} {instructions['old']:,.0f}, today/{label} {ratio:.3f} ({goal})")
        keys += [f"ab_ir_per_{name}_new={instructions['new']:.0f}", f"ab_ir_per_{name}_old={instructions['old']:.0f}",
                 f"ab_ir_per_{name}_ratio={ratio:.3f}"]
    if options.result:
        Path(options.result).write_text(" ".join(keys) + "\n")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("older", help="print the path of COMMIT's release satchel, built once")
    build.add_argument("commit")
    ab = commands.add_parser("run", help="the A/B")
    ab.add_argument("--tool", default="serve_ab", help="the name messages start with")
    ab.add_argument("--new", required=True)
    ab.add_argument("--old", required=True)
    ab.add_argument("--label", required=True, help="the baseline's commit")
    ab.add_argument("--work", required=True)
    ab.add_argument("--case", nargs=4, action="append", default=[], metavar=("NAME", "PATH", "FILE", "LABEL"))
    ab.add_argument("--check", nargs=2, action="append", default=[], metavar=("PATH", "REGEX"))
    ab.add_argument("--prepare", help="a command run in each side's folder before it starts ({satchel}, {dir})")
    ab.add_argument("--pairs", type=int, default=5)
    ab.add_argument("--seconds", type=int, default=10)
    ab.add_argument("--threads", type=int, default=os.cpu_count())
    ab.add_argument("--connections", type=int, default=64)
    ab.add_argument("--prime-seconds", type=int, default=1, help="the untimed run before each timed one")
    ab.add_argument("--callgrind", metavar="CASE")
    ab.add_argument("--callgrind-requests", type=int, default=2000)
    ab.add_argument("--callgrind-warmup", type=int, default=500)
    ab.add_argument("--goal", type=float, default=0.95, help="the least median ratio today/baseline")
    ab.add_argument("--goal-instructions", type=float, default=1.05, help="the most instructions today/baseline")
    ab.add_argument("--result", help="a file for the RESULT keys")
    ab.add_argument("serve", nargs=argparse.REMAINDER, help="-- then satchel serve's arguments ({dir}: the side's folder)")
    options = parser.parse_args()
    if options.command == "older":
        print(older_satchel(options.commit, release=True))
        return 0
    if options.serve[:1] == ["--"]:
        options.serve = options.serve[1:]
    if options.pairs < 1 or options.seconds < 1:
        parser.error("--pairs and --seconds must be at least 1")
    try:
        return run(options)
    except Failure as failure:
        print(f"{options.tool}: A/B: {failure}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
