#!/usr/bin/env bash
# make bench-scale: the engine at Cruise Control's published scale (200 -> 215
# brokers, 933,000 partitions at RF 3, 2.8M replicas), printed next to the
# figures measured before the engine was tuned for it
# (internal/engine/testdata/bench-scale-baseline.txt). On a shared machine
# CPU time and allocations per plan are the figures to trust; wall time
# moves with the other work running. Then the provider end to end at the
# same scale, on a fake cluster (see below).
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

# The provider end to end: the real provider under the real terraform
# against kafkafake, a fake cluster of 933,000 partitions on 200 brokers
# (internal/kafkafake). The fake answers the read path only: these figures
# are the cost of reading, planning and recording such a cluster, not of
# moving it. Before: the same benchmark run on the code before the state
# was bounded (internal/provider/testdata/bench-scale-provider-baseline.txt).
pbaseline=internal/provider/testdata/bench-scale-provider-baseline.txt
pout="$(mktemp)"
trap 'rm -f "$out" "$pout"' EXIT
echo
go test -run '^$' -bench 'ProviderCruiseControlScale' -benchtime 1x -timeout 30m ./internal/provider/ | tee "$pout"

pmetrics() {
  grep '^BenchmarkProviderCruiseControlScale' "$1" | tail -1 |
    awk '{ for (i = 5; i < NF; i += 2) printf "%s=%s\n", $(i+1), $i }'
}
requests() { grep -o 'plan: .*requests: [^;]*' "$1" | tail -1 | sed 's/.*requests: //'; }
pbefore="$(pmetrics "$pbaseline")"
pafter="$(pmetrics "$pout")"
echo
echo "provider, end to end: kafkafake, 933,000 partitions at RF 3, terraform plan 200 -> 215 brokers"
printf '%-30s %12s %12s %12s\n' "" "before" "now" "target"
printf '%-30s %12s %12s %12s\n' "terraform plan, s" "$(get "$pbefore" plan-s)" "$(get "$pafter" plan-s)" "< 15"
printf '%-30s %12s %12s %12s\n' "provider peak RSS, MB" "$(get "$pbefore" plan-rss-MB)" "$(get "$pafter" plan-rss-MB)" "< 2000"
printf '%-30s %12s %12s %12s\n' "state after refresh, MB" "$(get "$pbefore" state-MB)" "$(get "$pafter" state-MB)" "< 10"
printf '%-30s %12s %12s %12s\n' "refresh, s" "$(get "$pbefore" refresh-s)" "$(get "$pafter" refresh-s)" ""
printf '%-30s %12s %12s %12s\n' "Kafka requests in the plan" "$(get "$pbefore" plan-requests)" "$(get "$pafter" plan-requests)" ""
echo "  before: $(requests "$pbaseline")"
echo "  now:    $(requests "$pout")"
echo "(requests exclude ApiVersions, one per connection; the state includes private state)"
