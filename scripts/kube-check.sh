#!/usr/bin/env bash
# Checks the Kubernetes manifests in deploy/kubernetes against the API schemas of a Kubernetes version, with
# kubeconform (strict: unknown fields are errors), since no cluster runs here. Installs what it needs into
# target/tools from package registries only: kubeconform as a Go module, the schemas from the PyPI wheel of
# kubernetes-validate, made standalone by scripts/kube-schemas.py (kubeconform would otherwise download them).
#
# usage: scripts/kube-check.sh            K8S_VERSION (default 1.33.0) picks the schemas (1.25.0 to 1.37.0)
set -euo pipefail
cd "$(dirname "$0")/.."
KUBECONFORM_VERSION=v0.7.0
SCHEMAS_VERSION=1.37.0 # kubernetes-validate on PyPI
K8S_VERSION=${K8S_VERSION:-1.33.0}
TOOLS=$PWD/target/tools
mkdir -p "$TOOLS"

if [ ! -x "$TOOLS/kubeconform-$KUBECONFORM_VERSION/kubeconform" ]; then
    command -v go >/dev/null || { echo "kube-check: Go is needed to install kubeconform" >&2; exit 1; }
    GOBIN="$TOOLS/kubeconform-$KUBECONFORM_VERSION" go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
fi
WHEEL=$TOOLS/kubernetes_validate-$SCHEMAS_VERSION-py3-none-any.whl
if [ ! -f "$WHEEL" ]; then
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --dest "$TOOLS" "kubernetes-validate==$SCHEMAS_VERSION"
fi
SCHEMAS=$TOOLS/kube-schemas-$SCHEMAS_VERSION
rm -rf "$SCHEMAS"
python3 scripts/kube-schemas.py "$WHEEL" "$K8S_VERSION" "$SCHEMAS" deploy/kubernetes/*.yaml >/dev/null
"$TOOLS/kubeconform-$KUBECONFORM_VERSION/kubeconform" -strict -summary -kubernetes-version "$K8S_VERSION" \
    -schema-location "$SCHEMAS/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
    deploy/kubernetes/*.yaml
