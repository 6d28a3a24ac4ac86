#!/usr/bin/env bash
# make test: every package's tests, unit and acceptance (TF_ACC=1), with
# gotestsum keeping the events as JSON for scripts/testtimes.
#
# The provider's package runs beside all the others. Its first part, the
# acceptance tests that must run alone, leaves about a third of the
# machine idle (they wait on throttled copies and on Terraform), and the
# other packages fit in most of that room; its second part, the tests
# that run side by side, keeps both cores busy: TEST_PARALLEL at a time
# while the other packages' tests still run, one more once they end.
# Within each of the two runs, packages go one at a time (-p 1): each
# starts JVMs, and more at once only makes all of them slower.
#
# Usage: scripts/test.sh BIN_DIR PKG...   (GOTESTSUM, TEST_PARALLEL and
# TEST_TIMEOUT from the environment, as the GNUmakefile sets them)
set -uo pipefail
bin=$1
shift
mkdir -p "$bin"
: "${GOTESTSUM:?}" "${TEST_PARALLEL:?}" "${TEST_TIMEOUT:?}"

mapfile -t pkgs < <(go list "$@")
provider=()
others=()
for p in "${pkgs[@]}"; do
  if [[ $p == */internal/provider ]]; then provider+=("$p"); else others+=("$p"); fi
done

# Files a test keeps for people to look at (t.ArtifactDir: the report
# pages and their screenshots) go under $bin/artifacts/_artifacts, one
# directory per test, named in the test's log.
artifacts="$(cd "$bin" && pwd)/artifacts"
mkdir -p "$artifacts"

# run NAME PARALLEL PKG...: one gotestsum over the packages, its events in
# $bin/test-NAME.json.
run() {
  local name=$1 parallel=$2
  shift 2
  TF_ACC=1 "$GOTESTSUM" --format standard-quiet --jsonfile "$bin/test-$name.json" -- \
    -p 1 -parallel "$parallel" -count=1 -timeout "$TEST_TIMEOUT" -artifacts -outputdir "$artifacts" "$@"
}

# While the other packages' tests run, this file exists, and the provider's
# acceptance tests run TEST_PARALLEL side by side; once they end, one more
# (internal/provider/side_by_side_test.go).
beside="$(cd "$bin" && pwd)/others-running"

rm -f "$bin"/test-provider.json "$bin"/test-others.json
status=0
started=$(date +%s)
pid=
rm -f "$beside"
if ((${#others[@]})); then
  touch "$beside"
fi
if ((${#provider[@]})); then
  KAFKASCALE_TEST_BESIDE_FILE=$beside KAFKASCALE_TEST_BESIDE_WIDTH=$TEST_PARALLEL \
    run provider $((TEST_PARALLEL + 1)) "${provider[@]}" &
  pid=$!
  # An interrupted make stops both runs; each test cleans up after itself.
  trap 'kill "$pid" 2>/dev/null; rm -f "$beside"; exit 130' INT TERM
fi
if ((${#others[@]})); then
  run others "$TEST_PARALLEL" "${others[@]}" || status=1
  rm -f "$beside"
  [[ -z $pid ]] || echo "   (the packages beside the provider's finished after $(($(date +%s) - started))s)"
fi
if [[ -n $pid ]]; then
  wait "$pid" || status=1
fi
echo "   (make test took $(($(date +%s) - started))s)"
cat "$bin"/test-provider.json "$bin"/test-others.json > "$bin/test.json" 2>/dev/null
go run ./scripts/testtimes "$bin/test.json" || true
exit "$status"
