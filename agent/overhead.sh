#!/usr/bin/env bash
# The agent's own CPU use with N managed busy processes: starts N shell busy loops, runs
# `smtsched agent run` over them for DURATION seconds with the given policy and period, and
# prints the agent's CPU time (getrusage, all its threads) as a share of one CPU. The busy loops
# are labelled "sh" by their command name; a one-workload matrix gives `plan` its estimates.
#
#   agent/overhead.sh [N=100] [PERIOD_MS=100] [POLICY=plan] [DURATION_S=60]
#
# Needs a release build (cargo build --release). Everything it starts is stopped at the end.
set -euo pipefail
n=${1:-100}
period=${2:-100}
policy=${3:-plan}
duration=${4:-60}
bin=${SMTSCHED:-$(dirname "$0")/../target/release/smtsched}
dir=$(mktemp -d)
pids=()
cleanup() {
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
cat > "$dir/sh.json" <<JSON
{"format":"smtsched-pr-matrix/1","source":"measured","machine":"overhead benchmark","placement":"cores",
 "workloads":["sh"],"solo":[{"workload":"sh","rate":1.0}],"pairs":[{"a":0,"b":0,"pr_a":0.6,"pr_b":0.6}]}
JSON
for _ in $(seq "$n"); do
    sh -c 'while :; do :; done' &
    pids+=($!)
done
list=$(IFS=,; echo "${pids[*]}")
"$bin" agent run --policy "$policy" --matrix "$dir/sh.json" --period-ms "$period" \
    --duration "$duration" --pid "$list" --state-dir "$dir/state" --json > "$dir/report.json"
python3 - "$dir/report.json" "$n" "$period" "$policy" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
share = r["agent_cpu_s"] / r["wall_s"]
print(f"tasks {sys.argv[2]:>4}  period {sys.argv[3]:>4} ms  policy {sys.argv[4]:<10} "
      f"periods {r['periods']:>5}  agent CPU {r['agent_cpu_s']:.3f} s over {r['wall_s']:.1f} s = "
      f"{100 * share:.3f}% of one CPU (user {r['agent_user_s']:.3f} s, kernel {r['agent_system_s']:.3f} s; "
      f"{1e6 * r['agent_cpu_s'] / max(r['periods'], 1):.0f} µs per period)  "
      f"changes {r['changes']}  errors {r['errors']}")
PY
