#!/usr/bin/env bash
# Runs the official MCP conformance client scenarios (initialize, tools_call, sse-retry) three
# times: through mcp-cancellable, on the bare SDK client, and with mcp-cancellable proxy between
# the scenario's server and the bare SDK client (stdio to the proxy, Streamable HTTP to the server). The runner needs Node 22+, so it runs on
# a cached Node 22 binary (.ci/node-matrix.sh). Fails if any scenario fails through the wrapper or the proxy.
# The client command starts with `exec` so the runner's timeout reaches the client itself.
# The runner (@modelcontextprotocol/conformance, engines node >= 22) lives in its own folder,
# test/conformance/runner, installed here with the Node 22 binary: kept out of the root
# devDependencies, a Node 20 `npm ci` of the project shows no EBADENGINE warning.
set -euo pipefail
cd "$(dirname "$0")/.."
node22=$(bash .ci/node-matrix.sh 22)
(cd test/conformance/runner && PATH="$(dirname "$node22"):$PATH" npm ci --no-audit --no-fund --loglevel=error)
runner=test/conformance/runner/node_modules/@modelcontextprotocol/conformance/dist/index.js
failed=0
printf '%-12s %-10s %s\n' scenario client result
for scenario in initialize tools_call sse-retry; do
  for mode in wrapped bare proxy; do
    command="exec node --import tsx test/conformance/client.ts"
    [ "$mode" = bare ] && command="$command --bare"
    # proxy: the bare v1 client over stdio, its server command `mcp-cancellable proxy --url <scenario url>` (issue 22).
    [ "$mode" = proxy ] && command="exec node --import tsx test/proxy/conformance-client.ts"
    if out=$(timeout -k 5 120 "$node22" "$runner" client --command "$command" \
      --scenario "$scenario" --timeout 30000 2>&1); then result=PASS; else result=FAIL; fi
    printf '%-12s %-10s %s (%s)\n' "$scenario" "$mode" "$result" "$(grep -o 'Passed: [0-9]*/[0-9]*' <<<"$out" | tail -1)"
    if [ "$result" = FAIL ]; then
      echo "$out" | tail -20
      [ "$mode" != bare ] && failed=1
    fi
  done
done
exit "$failed"
