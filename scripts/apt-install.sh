#!/usr/bin/env bash
# apt-install.sh PACKAGE BINARY: installs PACKAGE from the distribution's
# packages unless BINARY is already there, and prints BINARY's version.
# What make tools needs from Debian (Prometheus, Chromium) goes through
# here. Needs root to install (CI runs as root).
set -euo pipefail
pkg=$1
bin=$2

if [[ -x "$bin" ]]; then
  "$bin" --version 2>&1 | sed -n 1p
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "apt-install: $bin is missing and installing it needs root (apt-get install $pkg)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh image has no package lists; refresh them only when apt does not
# know the package yet, so a warm machine makes no network call.
if ! apt-cache show "$pkg" >/dev/null 2>&1; then
  apt-get update -qq
fi
# Installing must not start a packaged service: the tests run their own
# servers, and a system Prometheus would hold port 9090 for nothing.
# policy-rc.d exit code 101 tells invoke-rc.d "action forbidden".
policy=/usr/sbin/policy-rc.d
added_policy=0
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  added_policy=1
fi
trap '[[ $added_policy -eq 1 ]] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "$pkg"
"$bin" --version 2>&1 | sed -n 1p
