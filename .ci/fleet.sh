#!/usr/bin/env bash
# The fleet leg (issue 31): two replicas of `mcp-cancellable proxy --listen` behind a real HAProxy
# and behind a real nginx (Debian's packages), configured as docs/proxy.md says, real SDK clients
# in both eras, one replica killed mid-call, one drained (test/fleet/*.fleet.ts). Installs HAProxy
# and nginx when missing (apt-get, as root; nginx is started by the test as a user's process, its
# system service untouched); skipped, with the reason printed, only where apt-get as root is
# impossible (the nginx file alone skips when nginx could not be installed). Writes its vitest JSON report to
# .ci/results/fleet-haproxy.json, which .ci/count.mjs counts with the others.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .ci/results
report=.ci/results/fleet-haproxy.json

haproxy_bin() { for b in /usr/sbin/haproxy /usr/bin/haproxy /usr/local/sbin/haproxy; do [ -x "$b" ] && { echo "$b"; return 0; }; done; return 1; }
nginx_bin() { for b in /usr/sbin/nginx /usr/bin/nginx /usr/local/sbin/nginx; do [ -x "$b" ] && { echo "$b"; return 0; }; done; return 1; }

if ! nginx_bin >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" -eq 0 ]; then
  # policy-rc.d 101: the package's service is not started (the test runs its own nginx).
  had_policy=0
  if [ -e /usr/sbin/policy-rc.d ]; then had_policy=1; else printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; fi
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null) || echo "apt-get could not install nginx: its fleet test is skipped"
  if [ "$had_policy" -eq 0 ]; then rm -f /usr/sbin/policy-rc.d; fi
fi
nginx_bin >/dev/null && echo "== fleet: and behind $("$(nginx_bin)" -v 2>&1)"

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
