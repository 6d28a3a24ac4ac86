#!/usr/bin/env bash
# make bench-scale: the engine at Cruise Control's published scale (200 -> 215
# brokers, 933,000 partitions at RF 3, 2.8M replicas), printed next to the
# figures measured before the engine was tuned for it
# (internal/engine/testdata/bench-scale-baseline.txt). On a shared machine
# CPU time and allocations per plan are the figures to trust; wall time
# moves with the other work running.
set -euo pipefail
cd "$(dirname "$0")/.."

baseline=internal/engine/testdata/bench-scale-baseline.txt
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'CruiseControlScale' -benchtime "${BENCHTIME:-3x}" -benchmem -timeout 30m ./internal/engine/ | tee "$out"

# metrics FILE prints the last benchmark line's figures as name=value lines.
metrics() {
  grep '^BenchmarkScaleOutCruiseControlScale' "$1" | tail -1 |
    awk '{ printf "ns/op=%s\n", $3; for (i = 5; i < NF; i += 2) printf "%s=%s\n", $(i+1), $i }'
}
get() { awk -F= -v k="$2" '$1 == k { print $2 }' <<<"$1"; }
before="$(metrics "$baseline")"
after="$(metrics "$out")"
echo
printf '%-12s %16s %16s\n' "per plan" "before" "now"
printf '%-12s %16s %16s\n' "time ms" "$(get "$before" ns/op | awk '{ printf "%.0f", $1 / 1e6 }')" "$(get "$after" ns/op | awk '{ printf "%.0f", $1 / 1e6 }')"
printf '%-12s %16s %16s\n' "cpu ms" "$(get "$before" cpu-ms/op)" "$(get "$after" cpu-ms/op)"
printf '%-12s %16s %16s\n' "MB alloc" "$(get "$before" B/op | awk '{ printf "%.0f", $1 / 1e6 }')" "$(get "$after" B/op | awk '{ printf "%.0f", $1 / 1e6 }')"
printf '%-12s %16s %16s\n' "allocs" "$(get "$before" allocs/op)" "$(get "$after" allocs/op)"
printf '%-12s %16s %16s\n' "moves" "$(get "$before" moves)" "$(get "$after" moves)"
printf '%-12s %16s %16s\n' "lower bound" "$(get "$before" lowerbound)" "$(get "$after" lowerbound)"
echo "targets: under 1000 ms and 300 MB allocated per plan, moves equal to the lower bound"
