#!/usr/bin/env bash
# The fleet leg (issue 31): two replicas of `mcp-cancellable proxy --listen` behind a real HAProxy
# (Debian's package), real SDK clients in both eras, one replica killed mid-call
# (test/fleet/haproxy.fleet.ts). Installs HAProxy when missing (apt-get, as root); skipped, with
# the reason printed, only where apt-get as root is impossible. Writes its vitest JSON report to
# .ci/results/fleet-haproxy.json, which .ci/count.mjs counts with the others.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .ci/results
report=.ci/results/fleet-haproxy.json

haproxy_bin() { for b in /usr/sbin/haproxy /usr/bin/haproxy /usr/local/sbin/haproxy; do [ -x "$b" ] && { echo "$b"; return 0; }; done; return 1; }

if ! haproxy_bin >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" -eq 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null) || echo "apt-get could not install haproxy"
  else
    echo "SKIP fleet: no HAProxy, and no apt-get as root to install it"
    exit 0
  fi
fi
if ! bin=$(haproxy_bin); then
  echo "fleet: HAProxy could not be installed"
  echo '{"numPassedTests":0,"numFailedTests":1}' > "$report"
  exit 0
fi
echo "== fleet: two replicas behind $("$bin" -v | head -n 1)"
npx vitest run --config test/fleet/vitest.config.ts --reporter=default --reporter=json --outputFile="$report" || true
# A run that wrote no report (vitest itself failed) counts as one failure.
[ -s "$report" ] || echo '{"numPassedTests":0,"numFailedTests":1}' > "$report"
