#!/usr/bin/env bash
# Installs Chromium from the distribution's packages, for the test that opens
# `kafkascale report` pages in a headless browser (cmd/kafkascale, driven
# with chromedp; CHROMIUM_BIN overrides the path). Idempotent: does nothing
# when the binary is already there.
set -euo pipefail
exec "$(dirname "$0")/apt-install.sh" chromium "${CHROMIUM_BIN:-/usr/bin/chromium}"
