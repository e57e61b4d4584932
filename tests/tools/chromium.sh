#!/usr/bin/env bash
# Installs Debian's `chromium` and `chromium-driver` when either is missing,
# for the browser tests (tests/api/browser_*.rs). Those tests drive headless
# Chromium through chromedriver's WebDriver port on loopback; without the
# packages they skip, unless COOP_TEST_REQUIRE_BROWSER=1 (CI) makes them fail.
#
# Usage: tests/tools/chromium.sh   (as root, or with sudo available)
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >&2
chromium --version >&2
chromedriver --version >&2
