#!/usr/bin/env bash
# Issue 13's core-count figures in one command, for a machine with many cores.
#
#   scripts/scaling.sh [OUT_DIR]            (default OUT_DIR: out)
#
# Runs, each with --quick: bench vector (64 envs; state and camera 64x64; dmxshm at
# 1, cores/4, cores/2 and cores workers, its asynchronous API and free-running workers
# at each; AsyncVectorEnv and SyncVectorEnv once) with the scaling plot; bench network;
# bench ipc. Writes JSON, the plot and each command's output to OUT_DIR. About 2 minutes
# on 2 cores. On a machine without a package index, run it through the bundle:
#   DMX_RUN=".dev/run-here.sh dmxshm" scripts/scaling.sh out
# A missed --check target does not stop the script (exit 3 is noted, not fatal).
set -uo pipefail
out=${1:-out}
run=${DMX_RUN:-dmxshm}
mkdir -p "$out"
cores=$(nproc)
workers=$(printf '%s\n' 1 $((cores / 4)) $((cores / 2)) "$cores" | awk '$1 > 0' | sort -nu)
sweep=""
for w in $workers; do sweep="$sweep --workers $w"; done
echo "cores: $cores; workers: $(echo $workers)" | tee "$out/machine.txt"
step() {  # name, then the command; its output goes to OUT_DIR/name.txt
  local name=$1; shift
  echo "== $name: $*"
  "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.txt"
  echo "== $name: exit $rc"
}
# shellcheck disable=SC2086  # $run and $sweep are word lists on purpose
step vector $run bench vector --quick --num-envs 64 --obs state --obs camera64 $sweep \
  --json "$out/vector.json" --scaling-plot "$out/scaling.png" --check
step network $run bench network --quick --json "$out/network.json" --check
step ipc $run bench ipc --quick --json "$out/ipc.json" --check
