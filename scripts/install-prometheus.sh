#!/usr/bin/env bash
# Installs the Prometheus server from the distribution's packages, for the
# dynamic-throttle tests (internal/kafkatest starts /usr/bin/prometheus
# itself; the packaged service is not started). Idempotent: does nothing
# when the binary is already there. PROMETHEUS_BIN overrides the path.
set -euo pipefail
exec "$(dirname "$0")/apt-install.sh" prometheus "${PROMETHEUS_BIN:-/usr/bin/prometheus}"
