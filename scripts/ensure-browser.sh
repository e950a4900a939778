#!/usr/bin/env bash
# Installs Debian's Chromium for the real-browser tests when it is missing.
# Never downloads a browser through Playwright (that is unreachable here).
set -u
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium via apt (for browser tests)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
    || echo "warning: could not install chromium; browser tests will be skipped" >&2
else
  echo "note: /usr/bin/chromium missing and apt-get unavailable; browser tests will be skipped" >&2
fi
exit 0
