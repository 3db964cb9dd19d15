"""The plumbing tools/*'s Python scripts share: the repository root, builds, ports, servers started and stopped, folders
removed, a display, and the pass/fail count. tools/lib/common.sh is the same for the bash scripts.

A script imports it with tools/lib on its path:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
"""

import argparse
import atexit
import os
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def run(arguments, **kwargs):
    """Runs a command to completion and returns its stdout; a non-zero exit raises, with the end of its stderr."""
    result = subprocess.run([str(a) for a in arguments], capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, arguments))} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result.stdout


def swift_build(*arguments, package=ROOT):
    """`swift build ARGUMENTS` in `package` (its output on stderr, where a user watches the build), then the bin folder
    for the same configuration."""
    subprocess.run(["swift", "build", *arguments], cwd=package, check=True, stdout=sys.stderr)
    return bin_path(*arguments, package=package)


def bin_path(*arguments, package=ROOT):
    return Path(run(["swift", "build", *arguments, "--show-bin-path"], cwd=package).strip())


def satchel_cli(binary, env=None):
    """satchel(*arguments, expect=0) -> the CompletedProcess of the CLI, its output captured. An exit status other than
    `expect` (None: any) stops the script with the command and what it printed: what follows would mean nothing."""
    def satchel(*arguments, expect=0):
        result = subprocess.run([binary, *arguments], env=env, capture_output=True, text=True)
        if expect is not None and result.returncode != expect:
            raise SystemExit(f"satchel {' '.join(map(str, arguments))} exited {result.returncode}:\n{result.stdout}{result.stderr}")
        return result
    return satchel


def satchel_binary():
    """The debug satchel the tests run: $SATCHEL when set (tools/test builds once), else built only when missing, so a
    test run does not pay for a no-op build per script."""
    if os.environ.get("SATCHEL"):
        return Path(os.environ["SATCHEL"])
    binary = bin_path() / "satchel"
    if not binary.exists():
        swift_build("--product", "satchel")
    return binary


# The last commit before the catalog's `content` field and its `rollouts`: its updater stands for one in the field
# (tools/e2e-update and tools/e2e-rollout run it, so one build serves both).
FIELD_UPDATER_COMMIT = "0fce9f96c34f260b6aa3f5ea7d487246d50ff75a"
# The last commit before steps (issue 50): its updater reads content but not content.steps (tools/e2e-update runs it).
BEFORE_STEPS_COMMIT = "2d4fa92f73841e7a7b3e59816d5edf88a0f558e9"


def older_satchel(commit, release=False):
    """The satchel CLI as built from `commit` of this repository, for tests of what an updater already in the field does
    with today's formats, and for benchmarks against the code before a change (`release=True`). Built once from
    `git archive` into .build-older/<commit> (a few minutes) and kept there; the clone needs its history (CI's clean
    clone has it)."""
    folder = ROOT / ".build-older" / commit
    configuration = "release" if release else "debug"
    binary = folder / ".build" / configuration / "satchel"
    # Written after a build that finished: the binary alone may be one another process is still linking (tools/test
    # builds these in the background from its start; a second build waits for SwiftPM's lock, then finds it done).
    built = folder / ".build" / f"satchel-{configuration}.built"
    if built.exists() and binary.exists():
        return binary
    older_tree(commit)
    print(f"building satchel ({configuration}) as of {commit} (once, into {folder})...", file=sys.stderr)
    subprocess.run(["swift", "build", "-c", configuration, "--product", "satchel"], cwd=folder, check=True, stdout=sys.stderr)
    built.touch()
    return binary


# The older updaters the end-to-end scripts run (tools/e2e-update, e2e-trust, e2e-rollout): tools/test builds them in
# the background from its start (`python3 tools/lib/satchel_tools.py prebuild-older`).
OLDER_UPDATERS = (FIELD_UPDATER_COMMIT, BEFORE_STEPS_COMMIT)


def older_tree(commit):
    """The whole tree of `commit` of this repository, extracted once with `git archive` into .build-older/<commit> (the
    folder older_satchel and older_viewer build in) and kept there."""
    folder = ROOT / ".build-older" / commit
    if not (folder / "Package.swift").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit], capture_output=True)
        if archive.returncode != 0:
            raise SystemExit(f"cannot read commit {commit} of {ROOT} (a shallow clone?): {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def older_viewer(commit):
    """The WebKitGTK viewer satchel-webview (release) as built from `commit`, for benchmarks of page loads against the
    code before a change (tools/bench-pageload --baseline). Built once from the tree older_tree extracts, in its
    integrations/webkitgtk package (which builds the core of the same commit by path), and kept there."""
    package = older_tree(commit) / "integrations" / "webkitgtk"
    if not (package / "Package.swift").exists():
        raise SystemExit(f"commit {commit} has no WebKitGTK viewer (integrations/webkitgtk)")
    binary = package / ".build" / "release" / "satchel-webview"
    if binary.exists():
        return binary
    print(f"building satchel-webview (release) as of {commit} (once, into {package})...", file=sys.stderr)
    subprocess.run(["swift", "build", "-c", "release", "--package-path", str(package), "--product", "satchel-webview"],
                   cwd=package, check=True, stdout=sys.stderr)
    return binary


def free_port():
    """A loopback port nothing listens on now: for a server to come, or as an origin that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def listening_url(process, what="the server", timeout=20.0):
    """(url, port) from a server's first stdout line, `listening on URL` (satchel serve prints it once bound; the link
    emulator's URL has no scheme). A server that says something else, or nothing in time, is killed and raises."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline() if ready else ""
    line = line.decode() if isinstance(line, bytes) else line
    if not line.startswith("listening on "):
        process.kill()
        error = process.stderr.read() if process.stderr else ""
        raise RuntimeError(f"{what} did not say where it listens (got {line!r}) {error or ''}".strip())
    url = line.strip()[len("listening on "):]
    return url, int(url.rsplit(":", 1)[1])


def stop_server(process, attempts=30):
    """SIGTERM until a `satchel serve` goes, then (stdout, stderr). It installs its signal handler just after printing its
    first line; a SIGTERM that lands in between is lost, so one is not enough."""
    for _ in range(attempts):
        process.send_signal(signal.SIGTERM)
        try:
            return process.communicate(timeout=1)
        except subprocess.TimeoutExpired:
            continue
    process.kill()
    return process.communicate()


def stop_group(process, grace=5.0):
    """Ends a process started with start_new_session=True and its whole group (a viewer's WebKit processes, a browser's
    driver): SIGTERM, SIGKILL after `grace` seconds; an exited one's leftover children are killed too."""
    if process.poll() is not None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def temp_dir(prefix, keep=lambda: False):
    """A new folder, removed when the script exits, unless keep() then says to keep it (a failed run's logs)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(lambda: keep() or shutil.rmtree(path, ignore_errors=True))
    return path


def reexec_under_xvfb(*server_arguments):
    """Without a display, runs this script again under `xvfb-run -a` (server_arguments go to its -s)."""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("SATCHEL_XVFB_REEXEC"):
        return
    os.environ["SATCHEL_XVFB_REEXEC"] = "1"  # should xvfb-run give no display, fail rather than loop
    screen = ["-s", " ".join(server_arguments)] if server_arguments else []
    os.execvp("xvfb-run", ["xvfb-run", "-a", *screen, sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:]])


def start_nginx(template, prefix, ready_path="/", attempts=5, **values):
    """nginx (the template says `daemon off`) from `template` with @PREFIX@, @PORT@ and each @NAME@ of `values` filled
    in, on a free port, in its own process group. Returns (process, port) once `ready_path` answers; stop it with
    stop_group. A port taken between choosing and binding is retried with another."""
    prefix = Path(prefix)
    prefix.mkdir(parents=True, exist_ok=True)
    text = Path(template).read_text()
    for _ in range(attempts):
        port = free_port()
        config = text
        for name, value in {"PREFIX": prefix, "PORT": port, **values}.items():
            config = config.replace(f"@{name}@", str(value))
        (prefix / "nginx.conf").write_text(config)
        process = subprocess.Popen(["nginx", "-c", str(prefix / "nginx.conf"), "-p", str(prefix)], stdout=subprocess.DEVNULL,
                                   stderr=open(prefix / "stderr.log", "wb"), start_new_session=True)
        if wait_port(port, 5) and process.poll() is None:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(f"GET {ready_path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
                if sock.recv(12).startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
                    return process, port
        stop_group(process)
    raise RuntimeError(f"nginx did not start: {(prefix / 'stderr.log').read_text()[-1000:]}")


def webapp_tree(files, size_mb):
    """tools/gen-webapp-tree's tree the benchmarks share, in .build-bench/ (reused while its stamp matches)."""
    tree = ROOT / ".build-bench" / f"tree-{files}f-{size_mb}mb"
    subprocess.run([ROOT / "tools" / "gen-webapp-tree", tree, "--files", str(files), "--size-mb", str(size_mb)], check=True)
    return tree


def bench_arguments(doc):
    """The options of the benchmarks on tools/gen-webapp-tree's tree: --runs N, and the tree's --files N --size-mb N."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--size-mb", type=int, default=60)
    parser.add_argument("--baseline", metavar="COMMIT",
                        help="also time the satchel of this commit (a release build into .build-older/), interleaved: an A/B in one run")
    return parser.parse_args()


def median_table(times, base, heading, width, ratio):
    """{way: [seconds per run]} as a table, median, min and max per way and its median over `base`'s (the column
    `ratio`), then every run. Returns {way: median}."""
    medians = {name: statistics.median(values) for name, values in times.items()}
    column = len(ratio) + 2
    print(f"{heading:<{width}}{'median s':>10}{'min s':>9}{'max s':>9}{ratio:>{column}}")
    for name, values in times.items():
        print(f"{name:<{width}}{medians[name]:>10.3f}{min(values):>9.3f}{max(values):>9.3f}{medians[name] / medians[base]:>{column}.2f}")
    print("\nall runs (s): " + "; ".join(f"{n} " + " ".join(f"{t:.3f}" for t in v) for n, v in times.items()))
    return medians


def cpu_model():
    return next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")


class Report:
    """The pass/fail count. One line per check: `ok - NAME` / `not ok - NAME` and `    # detail` (tap=True, the browser
    suites), or `ok   NAME` / `FAIL NAME` and `     detail`. finish() prints the closing line every test ends with."""

    def __init__(self, name, tap=False):
        self.name, self.tap = name, tap
        self.passed = 0
        self.failed = []

    def check(self, name, condition, detail=""):
        if condition:
            self.passed += 1
            print(f"ok - {name}" if self.tap else f"ok   {name}", flush=True)
        else:
            self.failed.append(name)
            if self.tap:
                print(f"not ok - {name}" + (f"\n    # {detail}" if detail else ""), flush=True)
            else:
                print(f"FAIL {name}" + (f"\n     {detail}" if detail else ""), flush=True)
        return bool(condition)

    def attempt(self, name, function):
        """A check whose body may raise: an exception is a failure with its message."""
        try:
            result = function()
        except Exception as error:  # noqa: BLE001 - any failure of the check is the check failing
            return self.check(name, False, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
        if isinstance(result, tuple):
            return self.check(name, result[0], result[1])
        return self.check(name, result)

    def finish(self):
        """`NAME: N passed, N failed` (the line CI reads); the exit status: 1 if any failed."""
        return summary(self.name, self.passed, len(self.failed))


def summary(name, passed, failed):
    print(f"{name}: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


# A real web front end's published releases (docs/performance.md, "Per-file diffs"): six consecutive patch releases of
# Jupyter Notebook 7, whose wheels carry webpack output with content-hashed chunk names under notebook/static/.
NOTEBOOK_RELEASES = ["7.4.2", "7.4.3", "7.4.4", "7.4.5", "7.4.6", "7.4.7"]
NOTEBOOK_PREFIX = "notebook/static/"


def notebook_releases(work):
    """{version: {path under notebook/static/: bytes}} for NOTEBOOK_RELEASES, the wheels downloaded once from PyPI
    (`pip download`) into <work>/notebook/."""
    import zipfile
    folder = os.path.join(work, "notebook")
    os.makedirs(folder, exist_ok=True)
    contents = {}
    for version in NOTEBOOK_RELEASES:
        wheel = os.path.join(folder, f"notebook-{version}-py3-none-any.whl")
        if not os.path.exists(wheel):
            print(f"downloading notebook {version} from PyPI...", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "pip", "download", f"notebook=={version}", "--no-deps", "-q",
                            "--disable-pip-version-check", "-d", folder], check=True)
        with zipfile.ZipFile(wheel) as archive:
            contents[version] = {name[len(NOTEBOOK_PREFIX):]: archive.read(name) for name in archive.namelist()
                                 if name.startswith(NOTEBOOK_PREFIX) and not name.endswith("/")}
    return contents


if __name__ == "__main__":
    if sys.argv[1:] == ["prebuild-older"]:
        for commit in OLDER_UPDATERS:
            print(older_satchel(commit))
    else:
        raise SystemExit("usage: satchel_tools.py prebuild-older")
