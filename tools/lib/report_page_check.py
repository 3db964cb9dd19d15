"""The rollout report page (`satchel rollout report`) as a person sees it: opened from disk in headless Chromium
(Debian's chromium and chromium-driver, driven by Selenium with explicit paths, so nothing is downloaded), with a proxy
that leads nowhere so any request the page made would fail and show in the browser's network log.

    check_report_page(html_path, status_json, screenshot_path) -> [(ok, message), ...]

`status_json` is the parsed output of `satchel rollout status --json` for the same catalog and reports: every number
it gives per version must be in the page's DOM, exactly. Needs Selenium importable (tools/report-page-test runs under
.build-browser/venv, which tools/setup prepares)."""

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "browser")]
from satchel_tools import free_port  # noqa: E402
from shared import png_facts  # noqa: E402

CHROMIUM = os.environ.get("SATCHEL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SATCHEL_CHROMEDRIVER", "/usr/bin/chromedriver")

# What the page holds per version, read in the page itself: the summary row's data- attributes and the version's
# failures-by-reason table (matched on data-id and data-version, compared as strings: no CSS escaping to get wrong).
READ_VERSIONS = """
const rows = Array.from(document.querySelectorAll('tr.version-row'));
return rows.map(function (row) {
  const field = function (name) { return row.querySelector('[data-field="' + name + '"]'); };
  const section = Array.from(document.querySelectorAll('section.version')).find(function (s) {
    return s.dataset.id === row.dataset.id && s.dataset.version === row.dataset.version; });
  const reasons = {};
  if (section) {
    section.querySelectorAll('[data-field="failuresByReason"] tr[data-reason]').forEach(function (r) {
      reasons[r.dataset.reason] = r.dataset.count; });
  }
  const values = {};
  ['state', 'percent', 'offered', 'installed', 'confirmed', 'failed', 'failureRate'].forEach(function (name) {
    const cell = field(name);
    values[name] = cell ? {value: cell.dataset.value, text: cell.textContent.trim()} : null;
  });
  const interval = field('interval');
  return {id: row.dataset.id, version: row.dataset.version, values: values, hasSection: !!section, reasons: reasons,
          interval: interval ? [interval.dataset.low, interval.dataset.high] : null};
});
"""

READ_PLOTS = """
return Array.from(document.querySelectorAll('svg.plot')).map(function (svg) {
  const box = svg.getBoundingClientRect();
  const drawn = Array.from(svg.querySelectorAll('polyline.series')).map(function (line) {
    const b = line.getBBox(); return [b.width, b.height]; });
  return {id: svg.id, width: box.width, height: box.height, series: drawn, shapes: svg.querySelectorAll('line, polyline, polygon, text').length};
});
"""


def start_browser(work):
    os.environ["SE_MANAGER_PATH"] = "/bin/false"  # Selenium Manager (which downloads) must never run
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    arguments = [
        "--headless=new", "--window-size=1280,1000",
        # A proxy on a port nothing listens on, loopback included: any request the page made would fail there, and be
        # in the performance log below either way.
        f"--proxy-server=http://127.0.0.1:{free_port()}", "--proxy-bypass-list=<-loopback>",
        "--disable-background-networking", "--disable-component-update", "--no-first-run", "--no-default-browser-check",
        "--disable-features=HttpsUpgrades,MediaRouter,OptimizationHints,NetworkTimeServiceQuerying",
        "--disable-dev-shm-usage", f"--user-data-dir={work}/profile",
    ]
    if os.geteuid() == 0:
        arguments.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox
    for argument in arguments:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    log = str(Path(work) / "chromedriver.log")
    try:
        service = Service(executable_path=CHROMEDRIVER, log_output=log, popen_kw={"start_new_session": True})
    except TypeError:  # an older Selenium without popen_kw
        service = Service(executable_path=CHROMEDRIVER, log_output=log)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    return driver


def stop_browser(driver):
    if driver is None:
        return
    service_process = getattr(driver.service, "process", None)
    try:
        driver.quit()
    except Exception:  # noqa: BLE001 - quitting a broken session may fail; the group kill below still runs
        pass
    if service_process is not None:
        try:
            os.killpg(service_process.pid, signal.SIGKILL)  # chromedriver and any Chromium it left behind
        except (ProcessLookupError, PermissionError):
            pass


def same_number(page_value, expected):
    """The page writes Swift's shortest round-trip text of a Double, the JSON the same value: equal once parsed."""
    try:
        return page_value is not None and float(page_value) == float(expected)
    except (TypeError, ValueError):
        return False


def compare_versions(found, status_json):
    """[(ok, message)] for each version of the status against the page's rows."""
    checks = []
    expected_versions = status_json.get("versions", [])
    checks.append((len(found) == len(expected_versions),
                   f"the page lists {len(found)} version(s), status {len(expected_versions)}"))
    for expected in expected_versions:
        name = f"{expected['id']} {expected['version']}"
        row = next((r for r in found if r["id"] == expected["id"] and r["version"] == expected["version"]), None)
        if row is None:
            checks.append((False, f"{name}: no row in the page"))
            continue
        problems = []
        for field in ("offered", "installed", "confirmed", "failed"):
            cell = row["values"].get(field)
            if cell is None or cell["value"] != str(expected[field]) or cell["text"] != str(expected[field]):
                problems.append(f"{field} {cell} != {expected[field]}")
        for field in ("percent", "failureRate"):
            cell = row["values"].get(field)
            if cell is None or not same_number(cell["value"], expected[field]):
                problems.append(f"{field} {cell} != {expected[field]}")
        state = row["values"].get("state")
        if state is None or state["value"] != expected["state"]:
            problems.append(f"state {state} != {expected['state']}")
        interval = row["interval"]
        if interval is None or not all(same_number(a, b) for a, b in zip(interval, expected["interval"])):
            problems.append(f"interval {interval} != {expected['interval']}")
        if "failuresByReason" in expected:
            page_reasons = {reason: int(count) for reason, count in row["reasons"].items()}
            if page_reasons != expected["failuresByReason"]:
                problems.append(f"failuresByReason {page_reasons} != {expected['failuresByReason']}")
        if not row["hasSection"]:
            problems.append("no section of its own")
        detail = "offered {offered}, installed {installed}, confirmed {confirmed}, failed {failed}, rate {failureRate:.4f}".format(**expected)
        checks.append((not problems, f"{name}: the page's numbers are status's ({detail})" + (f": {'; '.join(problems)}" if problems else "")))
    return checks


def network_requests(driver, page_url):
    """Every URL asked for on the page's behalf besides the page itself, and any network URL at all (the performance
    log's Network.requestWillBeSent). The browser's own UI (chrome:// pages such as the tab ChromeDriver opens first)
    loads for other documents and never from the network."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"]).get("message", {})
        if message.get("method") != "Network.requestWillBeSent":
            continue
        params = message.get("params", {})
        url = params.get("request", {}).get("url", "")
        if url == page_url:
            continue
        if params.get("documentURL") == page_url or url.split(":", 1)[0].lower() in ("http", "https", "ws", "wss", "ftp"):
            urls.append(url)
    return urls


def check_report_page(html_path, status_json, screenshot_path):
    checks = []

    def check(ok, message):
        checks.append((bool(ok), message))

    html_path = Path(html_path).resolve()
    work = tempfile.mkdtemp(prefix="satchel-report-page-")
    driver = None
    try:
        driver = start_browser(work)
        page_url = html_path.as_uri()
        driver.get_log("performance")  # drained: what the browser loaded before the page (its new-tab page) is not the page's
        driver.get(page_url)
        facts = driver.execute_script("return {ready: document.readyState, title: document.title, scripts: document.scripts.length, "
                                      "noReports: !!document.getElementById('no-reports')}")
        check(facts["ready"] == "complete" and facts["title"].startswith("Rollout report"),
              f"the page loads from disk ({facts['ready']}, title {facts['title']!r})")
        check(facts["scripts"] == 0, f"the page has no script element ({facts['scripts']})")

        plots = driver.execute_script(READ_PLOTS)
        expected_plots = 2 * len(status_json.get("versions", [])) if status_json.get("records", 0) > 0 else 0
        check(len(plots) == expected_plots, f"{len(plots)} SVG charts, two per version ({expected_plots})")
        flat = [p["id"] for p in plots if not (p["width"] > 100 and p["height"] > 30 and p["shapes"] > 10)]
        sizes = ", ".join("%s %.0fx%.0f" % (p["id"], p["width"], p["height"]) for p in plots[:4]) + ("…" if len(plots) > 4 else "")
        check((plots and not flat) if expected_plots else not plots,
              f"every chart is drawn with a size and its axes ({sizes})" + (f"; flat: {flat}" if flat else ""))
        devices = [p for p in plots if p["id"].startswith("devices-")]
        check(not expected_plots or any(any(w > 0 or h > 0 for w, h in p["series"]) for p in devices),
              "a devices chart draws its lines with a non-zero extent")

        check(facts["noReports"] == (status_json.get("records", 0) == 0),
              "the page says there are no reports exactly when status counts none" if facts["noReports"] else "the page does not claim an empty reports file")
        totals = driver.execute_script("return ['records', 'skipped'].map(function (id) { const e = document.getElementById(id); return e && e.dataset.value; })")
        check(totals == [str(status_json.get("records")), str(status_json.get("skipped"))],
              f"records and skipped lines as status counts them ({totals} vs {status_json.get('records')}, {status_json.get('skipped')})")
        for result in compare_versions(driver.execute_script(READ_VERSIONS), status_json):
            check(*result)

        resources = driver.execute_script("return performance.getEntriesByType('resource').map(function (e) { return e.name; })")
        requests = network_requests(driver, page_url)
        check(not resources and not requests, "the page made no request (no resource timing entry, nothing in the network log)"
              + (f": {resources[:3]} {requests[:3]}" if resources or requests else ""))

        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, min(max(int(height), 600), 12000))
        time.sleep(0.2)
        data = driver.get_screenshot_as_png()
        Path(screenshot_path).parent.mkdir(parents=True, exist_ok=True)
        Path(screenshot_path).write_bytes(data)
        width, shot_height, colours = png_facts(data)
        check(width >= 800 and shot_height >= 600 and colours > 4,
              f"the screenshot ({screenshot_path}, {width}x{shot_height}, {len(data)} bytes) is a PNG with content, not one flat colour")
    except Exception as error:  # noqa: BLE001 - a page that cannot be checked is a failed check, with why
        check(False, f"the page could be checked in Chromium: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    finally:
        stop_browser(driver)
        shutil.rmtree(work, ignore_errors=True)
    return checks
