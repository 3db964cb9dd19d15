# shellcheck shell=bash
# The plumbing tools/*'s bash scripts share (sourced): the repository root, builds, ports, servers started and
# stopped, folders removed, and the pass/fail count. tools/lib/satchel_tools.py is the same for the Python scripts.
# Sourcing it installs an EXIT trap: a script registers what to undo with stop_on_exit and remove_on_exit,
# never a trap of its own.

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# swift_build [SWIFT BUILD ARGUMENTS...] -> the bin folder of that package, scratch path and configuration.
# Build output goes to stderr, so that `x="$(swift_build ...)/x"` captures only the path.
swift_build() {
  swift build "$@" >&2 || return
  swift build "$@" --show-bin-path
}

# satchel_binary -> the debug satchel the tests run: $SATCHEL when set (tools/test builds once), else built only when
# missing, so a test run does not pay for a no-op build per script.
satchel_binary() {
  if [[ -n ${SATCHEL:-} ]]; then echo "$SATCHEL"; return; fi
  local bin
  bin=$(swift build --package-path "$repo_root" --show-bin-path) || return
  [[ -x $bin/satchel ]] || swift build --package-path "$repo_root" --product satchel >&2 || return
  echo "$bin/satchel"
}

# free_port -> a loopback port nothing listens on now (the kernel's choice, not a guess).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_port PORT [SECONDS]: until 127.0.0.1:PORT accepts a connection (default 10 s); fails after that.
wait_port() {
  local deadline=$((SECONDS + ${2:-10}))
  until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

# wait_listening FILE [SECONDS] -> the URL of a server whose stdout goes to FILE, from its first line,
# `listening on http://HOST:PORT` (satchel serve prints it once bound).
wait_listening() {
  local file=$1 deadline=$((SECONDS + ${2:-10})) line
  while ((SECONDS < deadline)); do
    line=$(head -1 "$file" 2>/dev/null)
    if [[ $line == "listening on http://"* ]]; then echo "${line#listening on }"; return; fi
    sleep 0.1
  done
  echo "no 'listening on http://...' line in $file after ${2:-10} s: ${line:-nothing}" >&2
  return 1
}

# What the EXIT trap undoes: processes (SIGTERM, then waited for) and folders.
_exit_pids=()
_exit_dirs=()
stop_on_exit() { _exit_pids+=("$@"); }
remove_on_exit() { _exit_dirs+=("$@"); }
_on_exit() {
  # A process gone already, or one that dies of the SIGTERM, is no error (and under set -e would be the exit status).
  if ((${#_exit_pids[@]})); then
    kill -TERM "${_exit_pids[@]}" 2>/dev/null || true
    wait "${_exit_pids[@]}" 2>/dev/null || true
  fi
  if ((${#_exit_dirs[@]})); then rm -rf "${_exit_dirs[@]}"; fi
  return 0
}
trap _on_exit EXIT

# need_tools TOOL...: installs nginx (as nginx-light) and wrk from Debian when they are missing.
need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || apt-get install -y -qq "$([[ $tool == nginx ]] && echo nginx-light || echo "$tool")" >/dev/null
  done
}

# nginx_start TEMPLATE PREFIX PORT [NAME=VALUE...]: nginx (the template says `daemon off`) in the background,
# configured from TEMPLATE with @PREFIX@, @PORT@ and each @NAME@ filled in. Returns once the port accepts
# connections, with nginx's pid in $! as `nginx &` would leave it; stopped on exit.
nginx_start() {
  local template=$1 prefix=$2 port=$3 pair
  shift 3
  local fill=(-e "s|@PREFIX@|$prefix|g" -e "s|@PORT@|$port|g")
  for pair in "$@"; do fill+=(-e "s|@${pair%%=*}@|${pair#*=}|g"); done
  mkdir -p "$prefix"
  sed "${fill[@]}" "$template" >"$prefix/nginx.conf"
  nginx -c "$prefix/nginx.conf" -p "$prefix" &
  stop_on_exit $!
  wait_port "$port" || { echo "nginx ($prefix/nginx.conf) did not start: $(tail -3 "$prefix/error.log" 2>/dev/null)" >&2; return 1; }
}

# The pass/fail count. check NAME COMMAND...: runs the command; `ok   NAME`, or `FAIL NAME` and its output indented.
passed=0
failed=0
check() {
  local name=$1 log
  shift
  log=$(mktemp)
  if "$@" >"$log" 2>&1; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; sed 's/^/     /' "$log"; fi
  rm -f "$log"
}

# finish NAME: the closing line every test script ends with, `NAME: N passed, N failed`; fails if any check failed.
finish() {
  echo "$1: $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
