#!/usr/bin/env bash
# Line coverage of dmxshm/ by the test suite, children included.
#
#   bash scripts/coverage.sh [OUT_DIR] [pytest arguments...]
#
# Runs pytest under coverage.py (7.10 or later: `pip install coverage`) in this
# checkout's environment (.venv/bin/python, else python3) and prints the report;
# OUT_DIR (default: a new temporary folder) keeps the data and report.txt. With no
# pytest arguments, the README's: `-n 2`.
#
# Every process is measured: coverage.py's `[run] patch = subprocess` starts it in
# every Python child (xdist's workers, a network's fresh interpreters), and
# `fork, _exit` keep what the fork server's children measured (dmxshm's fork
# server stays on with these patches; with COVERAGE_PROCESS_START it steps aside).
# A child killed by SIGKILL, as the faults tests do, saves nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
shift || true
[ $# -gt 0 ] || set -- -n 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=.venv/bin/python
[ -x "$py" ] || py=python3
cat > "$out/coveragerc" <<RC
[run]
source_pkgs = dmxshm
parallel = True
patch = subprocess, fork, _exit
data_file = $out/.coverage
[report]
precision = 2
RC
set +e
"$py" -m coverage run --rcfile="$out/coveragerc" -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
"$py" -m coverage combine --rcfile="$out/coveragerc" -q "$out"
"$py" -m coverage report --rcfile="$out/coveragerc" > "$out/report.txt"
tail -n 1 "$out/report.txt"
echo "coverage: $out/report.txt (pytest exit $rc)"
exit "$rc"
