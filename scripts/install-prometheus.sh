#!/usr/bin/env bash
# Installs the Prometheus server from the distribution's packages, for the
# dynamic-throttle tests (internal/kafkatest starts /usr/bin/prometheus
# itself; the packaged service is not needed). Idempotent: does nothing when
# the binary is already there. Needs root (CI runs it as root).
set -euo pipefail

bin=${PROMETHEUS_BIN:-/usr/bin/prometheus}
if [[ -x "$bin" ]]; then
  "$bin" --version 2>&1 | sed -n 1p
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-prometheus: $bin is missing and installing it needs root (apt-get install prometheus)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh image has no package lists; refresh them only when apt does not
# know the package yet, so a warm machine makes no network call.
if ! apt-cache show prometheus >/dev/null 2>&1; then
  apt-get update -qq
fi
# Installing must not start the packaged service: the tests run their own
# servers, and a system one would hold port 9090 for nothing. policy-rc.d
# exit code 101 tells invoke-rc.d "action forbidden".
policy=/usr/sbin/policy-rc.d
added_policy=0
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  added_policy=1
fi
trap '[[ $added_policy -eq 1 ]] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends prometheus
"$bin" --version 2>&1 | sed -n 1p
