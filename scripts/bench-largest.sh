#!/usr/bin/env bash
# make bench-largest: the largest real cluster this machine holds (issue 15,
# item 2): 5,000 empty partitions at RF 3 on 4 local brokers, scaled to 5 by
# kafkascale_cluster through Terraform (TestAccClusterResource_largestLocalCluster,
# which also asserts the outcome on the cluster). Prints the plan's wall time,
# the time from the apply to the first submitted step, split into the
# platform's broker start and the provider's own work, and the apply's time
# against its estimated_duration, next to the figures of an earlier run
# (internal/provider/testdata/bench-largest-baseline.txt). The machine is
# shared: read the figures as one sample, not a limit.
#
# PARTITIONS=10000 (a multiple of 500) tries another size.
set -euo pipefail
cd "$(dirname "$0")/.."

baseline=internal/provider/testdata/bench-largest-baseline.txt
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
export KAFKASCALE_LARGEST_PARTITIONS="${PARTITIONS:-${KAFKASCALE_LARGEST_PARTITIONS:-}}"
if ! TF_ACC=1 go test -count=1 -run '^TestAccClusterResource_largestLocalCluster$' -v -timeout 30m ./internal/provider/ >"$out" 2>&1; then
  tail -80 "$out"
  echo "bench-largest: the test failed"
  exit 1
fi

# figures FILE prints the test's "bench-largest:" lines and their
# continuation lines, without the testing prefix.
figures() {
  awk '
    /bench-largest: / { sub(/.*bench-largest: /, ""); print; on = 1; next }
    on && /^        / && !/_test\.go:[0-9]+:/ { sub(/^        /, ""); print; next }
    { on = 0 }
  ' "$1"
}
grep -E 'the whole test took|cluster of 4 brokers' "$out" | sed 's/^ *[a-z_]*_test\.go:[0-9]*: //'
echo
echo "== now"
figures "$out"
echo
echo "== baseline ($(sed -n 1p "$baseline"))"
sed 1d "$baseline"
echo
echo "target (issue 15): apply to the first submitted step under 5 s"
