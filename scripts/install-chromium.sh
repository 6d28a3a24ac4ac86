#!/usr/bin/env bash
# Installs Chromium from the distribution's packages, for the test that opens
# `kafkascale report` pages in a headless browser (cmd/kafkascale, driven
# with chromedp; CHROMIUM_BIN overrides the path). Idempotent: does nothing
# when the binary is already there. Needs root (CI runs it as root).
set -euo pipefail

bin=${CHROMIUM_BIN:-/usr/bin/chromium}
if [[ -x "$bin" ]]; then
  "$bin" --version 2>&1 | sed -n 1p
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-chromium: $bin is missing and installing it needs root (apt-get install chromium)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh image has no package lists; refresh them only when apt does not
# know the package yet, so a warm machine makes no network call.
if ! apt-cache show chromium >/dev/null 2>&1; then
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends chromium
"$bin" --version 2>&1 | sed -n 1p
