#!/usr/bin/env bash
# Validates the deploy files offline (there is no Docker engine or cluster here):
# - renders the kustomize base and every overlay, and checks each object against the
#   Kubernetes OpenAPI schemas (kubernetes-validate ships them, strict: no unknown fields);
# - checks docker-compose.yml against the Compose specification's JSON schema (from the
#   compose-go module) and that every service docker-compose.yml builds exists;
# - renders k8s/monitoring: its PodMonitor and PrometheusRule against the Prometheus
#   Operator's CRD schemas (from its Go module), the alert rules with `promtool check rules`
#   and their unit tests with `promtool test rules` (promtool built from Prometheus' module).
#   The dashboard's queries are checked against the metrics the services export by
#   libs/telemetry/test/monitoring.e2e.spec.ts (npm test).
# Tools come from the Go module proxy and PyPI into the git-ignored .local/tools.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/local/env.sh"
cd "$RS_ROOT"

KUSTOMIZE_VERSION=v5.7.1
KUBERNETES_VERSION=1.33.0
KUBERNETES_VALIDATE_VERSION=1.37.0
CHECK_JSONSCHEMA_VERSION=0.39.0
COMPOSE_GO_VERSION=v2.16.2
# Prometheus 3.5.0, whose Go module is versioned v0.305.0, and the Prometheus Operator 0.85.
PROMETHEUS_VERSION=3.5.0
PROMETHEUS_MODULE_VERSION=v0.305.0
PROMETHEUS_OPERATOR_VERSION=v0.85.0
KEDA_VERSION=v2.17.2
tools="$RS_ROOT/.local/tools"
mkdir -p "$tools"

if ! "$tools/kustomize" version 2>/dev/null | grep -q "$KUSTOMIZE_VERSION"; then
  GOBIN="$tools" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
fi
if ! "$tools/venv/bin/kubernetes-validate" --version 2>/dev/null | grep -q "$KUBERNETES_VALIDATE_VERSION" ||
   ! "$tools/venv/bin/check-jsonschema" --version 2>/dev/null | grep -q "$CHECK_JSONSCHEMA_VERSION"; then
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" "check-jsonschema==$CHECK_JSONSCHEMA_VERSION"
fi

if [ ! -x "$tools/promtool" ] || [ "$(cat "$tools/promtool.version" 2>/dev/null)" != "$PROMETHEUS_MODULE_VERSION" ]; then
  # `go install …@version` refuses Prometheus' module (its go.mod has replace directives):
  # build promtool inside the downloaded module, with the version it reports stamped in.
  echo "building promtool from github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION"
  prometheus="$(cd "$tools" && { [ -f go.mod ] || go mod init validate-tools >/dev/null 2>&1; } && go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  (cd "$prometheus" && go build -o "$tools/promtool" \
    -ldflags "-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" ./cmd/promtool)
  echo "$PROMETHEUS_MODULE_VERSION" > "$tools/promtool.version"
fi

rendered="$(mktemp -d)"
trap 'rm -rf "$rendered"' EXIT
# The CRDs of the custom kinds the manifests use, from their Go modules: the Prometheus
# Operator's (k8s/monitoring) and KEDA's (the optional k8s/overlays/keda).
operator="$(cd "$tools" && go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
[ -d "$operator/example/prometheus-operator-crd" ] || { echo "cannot download the Prometheus Operator $PROMETHEUS_OPERATOR_VERSION" >&2; exit 1; }
keda="$(cd "$tools" && go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
[ -d "$keda/config/crd/bases" ] || { echo "cannot download KEDA $KEDA_VERSION" >&2; exit 1; }
crds=("$operator/example/prometheus-operator-crd" "$keda/config/crd/bases")

# Renders a kustomization into $rendered/<name>/ and checks every object: Kubernetes' kinds
# with kubernetes-validate, custom kinds against their CRD's schema.
check() { # $1 kustomization, $2 name
  local out="$rendered/$2"
  "$tools/kustomize" build "$1" > "$out.yaml"
  echo -n "kustomize build $1: "
  "$tools/venv/bin/python" deploy/split_objects.py split "$out.yaml" "$out" "${crds[@]}"
  "$tools/venv/bin/kubernetes-validate" --strict --quiet -k "$KUBERNETES_VERSION" "$out"/core-*.yaml
  for object in "$out"/crd-*.json; do
    [ -e "$object" ] || continue
    index="${object##*/crd-}"
    "$tools/venv/bin/check-jsonschema" --regex-variant python --schemafile "$out/schema-$index" "$object"
  done
}
for kustomization in k8s/base k8s/overlays/*; do
  check "$kustomization" "$(echo "$kustomization" | tr / _)"
done

compose_go="$(cd "$tools" && { [ -f go.mod ] || go mod init validate-tools >/dev/null 2>&1; } && go mod download -json "github.com/compose-spec/compose-go/v2@$COMPOSE_GO_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
"$tools/venv/bin/check-jsonschema" --schemafile "$compose_go/schema/compose-spec.json" docker-compose.yml
for service in $(sed -n 's/^ *build: {.*args: { SERVICE: \([a-z]*\) } }$/\1/p' docker-compose.yml); do
  [ -f "services/$service/src/main.ts" ] || { echo "docker-compose.yml builds SERVICE=$service, which is not a service of services/" >&2; exit 1; }
done
grep -q '^ARG SERVICE$' deploy/Dockerfile || { echo "deploy/Dockerfile takes no SERVICE build argument" >&2; exit 1; }
# Monitoring (issue 13): checked as above, and its alert rules with promtool.
check k8s/monitoring monitoring
[ -f "$rendered/monitoring/rules.yaml" ] || { echo "k8s/monitoring has no PrometheusRule" >&2; exit 1; }
cp k8s/monitoring/alerts.test.yaml "$rendered/monitoring/"
"$tools/promtool" check rules "$rendered/monitoring/rules.yaml"
"$tools/promtool" test rules "$rendered/monitoring/alerts.test.yaml"
echo "deploy files are valid"
