#!/usr/bin/env bash
# Usage: gen-gomod.sh 1.37.2
# Writes ./go.mod of a tools module that builds kube-apiserver, kube-controller-manager and etcd (the test
# control plane), and kubelet, kube-scheduler and kube-proxy (the node lane, `make node`), from the Go
# module proxy. k8s.io/kubernetes replaces its staging modules (k8s.io/api, ...) with ./staging/src paths,
# which a dependent module ignores, so each one is pinned here to the published v0.X.Y tag.
# Only needed to bump the Kubernetes version; run `go mod tidy` afterwards and commit go.mod and go.sum.
set -euo pipefail
KV="${1:?kubernetes version like 1.37.2}"
SV="v0.${KV#1.}"
GOMOD_PATH="$(cd / && GOFLAGS= go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@v${KV}")"
STAGING=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => \./staging/src/.*#\1#p' "$GOMOD_PATH")
REQUIRED=$(awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r{print $1}' "$GOMOD_PATH")
GOVER=$(sed -n 's/^go \(.*\)/\1/p' "$GOMOD_PATH")
{
  printf 'module liqo-janitor/test/controlplane\n\ngo %s\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$GOVER" "$KV"
  for m in $STAGING; do
    if grep -qx "$m" <<<"$REQUIRED"; then printf '\t%s => %s %s\n' "$m" "$m" "$SV"; fi
  done
  printf ')\n\ntool (\n\tgo.etcd.io/etcd/server/v3\n\tk8s.io/kubernetes/cmd/kube-apiserver\n\tk8s.io/kubernetes/cmd/kube-controller-manager\n\tk8s.io/kubernetes/cmd/kube-proxy\n\tk8s.io/kubernetes/cmd/kube-scheduler\n\tk8s.io/kubernetes/cmd/kubelet\n)\n'
} > go.mod
