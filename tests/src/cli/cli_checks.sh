# What the command-line tests share, sourced by each (cli_test.sh DISTMM MPIEXEC, ...): the
# binary and the launcher from the test's arguments, a scratch folder, the counts of passed and
# failed checks, and expect_error.
bin=$1
mpiexec=${2:-mpiexec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
bad() { fail=$((fail + 1)); echo "FAILED: $1"; }

# expect_error NAME PATTERN RANKS ARGS... : exit 2, the pattern on one stderr line, fast.
expect_error() {
  local name=$1 pattern=$2 np=$3
  shift 3
  local cmd=("$bin" "$@")
  [ "$np" -gt 0 ] && cmd=("$mpiexec" -n "$np" --oversubscribe "$bin" "$@")
  timeout 120 "${cmd[@]}" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  local lines
  lines=$(grep -c "distmm: error" "$tmp/err")
  if [ "$code" -eq 124 ]; then bad "$name: hung"
  elif [ "$np" -eq 0 ] && [ "$code" -ne 2 ]; then bad "$name: exit $code, expected 2"
  elif [ "$np" -gt 0 ] && [ "$code" -eq 0 ]; then bad "$name: exit 0 under mpirun"
  elif [ "$lines" -ne 1 ]; then bad "$name: $lines error lines: $(cat "$tmp/err")"
  elif ! grep "distmm: error" "$tmp/err" | grep -q -- "$pattern"; then
    bad "$name: message '$(grep 'distmm: error' "$tmp/err")' lacks '$pattern'"
  else ok "$name"; fi
}
