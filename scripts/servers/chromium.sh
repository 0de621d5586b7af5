#!/usr/bin/env bash
# A headless Chromium for the browser tests of the console module.
#
# scripts/test.sh sources this file: it installs Debian's chromium from apt
# when it is missing and exports TEND_CHROMIUM, the browser the tests start
# (each test starts its own, headless, and stops it). There is nothing to
# stop afterwards.
#
# When no browser can be installed it says so loudly and exports nothing:
# the browser tests then fail under CI=true, and skip otherwise.
#
# Run by hand, it installs the browser and prints the export line:
#
#   eval "$(bash scripts/servers/chromium.sh | grep ^export)"

chromium_bin=""

# chromium_find sets chromium_bin to the installed browser, or leaves it empty.
chromium_find() {
  local b
  chromium_bin=""
  for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null; then
      chromium_bin=$(command -v "$b")
      return
    fi
  done
}

chromium_install() {
  chromium_find
  [ -n "$chromium_bin" ] && return
  if [ "$(id -u)" != 0 ]; then
    echo "chromium is not installed; install it (apt-get install chromium) or run as root" >&2
    return 1
  fi
  echo "installing chromium from apt" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2 || return 1
  chromium_find
  [ -n "$chromium_bin" ] || { echo "the chromium install left no browser" >&2; return 1; }
}

start_chromium() {
  chromium_install || return 1
  export TEND_CHROMIUM="$chromium_bin"
  echo "$("$chromium_bin" --version 2>/dev/null || echo chromium) at $TEND_CHROMIUM" >&2
}

# chromium_unavailable says loudly that the browser tests have no browser.
chromium_unavailable() {
  cat >&2 <<'MSG'

!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! NO CHROMIUM: the browser could not be installed on this machine (see the  !!
!! messages above). TEND_CHROMIUM is not set, so the console's browser      !!
!! tests fail under CI=true and skip otherwise.                             !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!

MSG
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  start_chromium || { chromium_unavailable; exit 1; }
  echo "export TEND_CHROMIUM='$TEND_CHROMIUM'"
else
  start_chromium || chromium_unavailable
fi
