#!/usr/bin/env bash
# make test: every package's tests, unit and acceptance (TF_ACC=1), with
# gotestsum keeping the events as JSON for scripts/testtimes.
#
# The provider's package runs beside all the others. Its first part, the
# acceptance tests that must run alone, leaves about a third of the
# machine idle (they wait on throttled copies and on Terraform), and the
# other packages fit in that room; its second part, the tests that run
# TEST_PARALLEL at a time, keeps both cores busy, and by then the others
# are done. Within each of the two runs, packages go one at a time (-p 1):
# each starts JVMs, and more at once only makes all of them slower.
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

# run NAME PKG...: one gotestsum over the packages, its events in
# $bin/test-NAME.json.
run() {
  local name=$1
  shift
  TF_ACC=1 "$GOTESTSUM" --format standard-quiet --jsonfile "$bin/test-$name.json" -- \
    -p 1 -parallel "$TEST_PARALLEL" -count=1 -timeout "$TEST_TIMEOUT" -artifacts -outputdir "$artifacts" "$@"
}

rm -f "$bin"/test-provider.json "$bin"/test-others.json
status=0
started=$(date +%s)
pid=
if ((${#provider[@]})); then
  run provider "${provider[@]}" &
  pid=$!
  # An interrupted make stops both runs; each test cleans up after itself.
  trap 'kill "$pid" 2>/dev/null; exit 130' INT TERM
fi
if ((${#others[@]})); then
  run others "${others[@]}" || status=1
  [[ -z $pid ]] || echo "   (the packages beside the provider's finished after $(($(date +%s) - started))s)"
fi
if [[ -n $pid ]]; then
  wait "$pid" || status=1
fi
echo "   (make test took $(($(date +%s) - started))s)"
cat "$bin"/test-provider.json "$bin"/test-others.json > "$bin/test.json" 2>/dev/null
go run ./scripts/testtimes "$bin/test.json" || true
exit "$status"
