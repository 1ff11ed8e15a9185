#!/usr/bin/env bash
# runtime-bin.sh - idempotently install the Deno or Bun binary from the npm registry into a
# cache dir OUTSIDE the repo (like node-matrix.sh does for Node) and print the binary's path on
# stdout. Both runtimes publish their binary inside a per-platform npm package
# (@deno/linux-x64-glibc, @oven/bun-linux-x64); the umbrella packages' install scripts are what
# would pick one, and npm 11 skips install scripts, so the platform package is installed and its
# binary run directly. Logs go to stderr. Exit 2 (and a line saying why) when this platform has
# no package.
#
# Usage: runtime-bin.sh deno|bun
# Env: MCP_RUNTIME_CACHE (default $HOME/.cache/mcp-cancellable-runtimes),
#      MCP_DENO_VERSION (default 2.9.6), MCP_BUN_VERSION (default 1.4.5)
set -euo pipefail

CACHE="${MCP_RUNTIME_CACHE:-$HOME/.cache/mcp-cancellable-runtimes}"
runtime="${1:?usage: runtime-bin.sh deno|bun}"
arch="$(uname -s)-$(uname -m)"
case "$runtime:$arch" in
  deno:Linux-x86_64) PKG=@deno/linux-x64-glibc; VERSION="${MCP_DENO_VERSION:-2.9.6}"; BIN=deno ;;
  deno:Linux-aarch64) PKG=@deno/linux-arm64-glibc; VERSION="${MCP_DENO_VERSION:-2.9.6}"; BIN=deno ;;
  bun:Linux-x86_64) PKG=@oven/bun-linux-x64; VERSION="${MCP_BUN_VERSION:-1.4.5}"; BIN=bin/bun ;;
  bun:Linux-aarch64) PKG=@oven/bun-linux-aarch64; VERSION="${MCP_BUN_VERSION:-1.4.5}"; BIN=bin/bun ;;
  *) echo "runtime-bin: no $runtime package for $arch" >&2; exit 2 ;;
esac

dir="$CACHE/$runtime-$VERSION"
bin="$dir/node_modules/$PKG/$BIN"
log() { echo "runtime-bin: $*" >&2; }

if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  log "$runtime $VERSION already present ($bin)"
else
  mkdir -p "$CACHE"
  tmp="$(mktemp -d "$CACHE/.tmp-$runtime.XXXXXX")"
  chmod 755 "$tmp"
  args=(install --prefix "$tmp" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error "$PKG@$VERSION")
  log "installing $PKG@$VERSION into $dir ..."
  npm "${args[@]}" >&2 || { log "npm install failed, retrying once ..."; sleep 5; npm "${args[@]}" >&2; }
  chmod +x "$tmp/node_modules/$PKG/$BIN" 2>/dev/null || true
  "$tmp/node_modules/$PKG/$BIN" --version >/dev/null || { log "$PKG@$VERSION installed but does not run"; rm -rf "$tmp"; exit 1; }
  rm -rf "$dir"
  mv -T "$tmp" "$dir" 2>/dev/null || { rm -rf "$tmp"; [ -x "$bin" ] || exit 1; }
  log "installed $("$bin" --version | head -1)"
fi
echo "$bin"
