# Shared by tools/bench-serve and tools/bench-proxy (sourced): one wrk run, parsed, with the CPU time the
# measured processes spent in it. The caller sets `threads` (wrk's threads) and `work` (a scratch folder).

# CPU time (user + system, clock ticks) of the given processes.
cpu_ticks() { local total=0 pid; for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo "$total"; }

# wrk_run URL CONNECTIONS SECONDS [PID...] -> "requests_per_s bytes_per_s errors cpu_us_per_request"
# (errors: socket errors and non-2xx/3xx answers; CPU: of the PIDs, over the run, per request).
wrk_run() {
  local url=$1 connections=$2 duration=$3 before after
  shift 3
  before=$(cpu_ticks "$@")
  wrk -t"$threads" -c"$connections" -d"$duration"s "$url" >"$work/wrk.out" 2>&1
  after=$(cpu_ticks "$@")
  python3 - "$work/wrk.out" "$((after - before))" "$(getconf CLK_TCK)" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ticks, hz = int(sys.argv[2]), int(sys.argv[3])
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
m = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", text)
scale = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}[m.group(2)]
errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
requests = int(re.search(r"(\d+) requests in", text).group(1))
print(f"{rps:.0f} {float(m.group(1)) * scale:.0f} {errors + (int(non2xx.group(1)) if non2xx else 0)} {ticks / hz * 1e6 / max(requests, 1):.1f}")
PY
}
