#!/usr/bin/env bash
# Usage: build.sh OUT_DIR
# Builds cert-manager's controller and cainjector of this tools module into OUT_DIR (`make cert-manager`).
#
# The module proxy answers 403 Forbidden ("This module version is not available") for the zip of
# github.com/Venafi/vcert/v5 v5.13.7, which cert-manager v1.21.2 requires (tried: every v5.13.x; v5.12.x,
# which it serves, lacks the pkg/venafi/ngts package cert-manager's Venafi client imports). Only the Venafi
# issuer's controllers use vcert, and the controller links them in through one import: its configuration
# defaults (internal/apis/config/controller/v1alpha1/defaults.go) take the two controllers' names from
# their packages. So the build compiles a copy of the cert-manager module (from the module cache) in which
# that one file spells the two names out instead (go build -modfile with a replace to the copy: go build
# -overlay refuses files of the module cache); controller/app/start.go no longer imports the Venafi issuer
# either. The Venafi issuer is therefore not built in; the tests issue with the selfSigned and CA issuers
# only. Everything else is cert-manager's own code, at the version go.mod requires.
set -euo pipefail
OUT="${1:?output directory}"
cd "$(dirname "$0")"
# go list -m names the module's directory only once it is in the module cache: download it first (a fresh
# machine's cache is empty).
go mod download github.com/cert-manager/cert-manager
module="$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$module" "$work/cert-manager"
chmod -R u+w "$work/cert-manager"
defaults="$work/cert-manager/internal/apis/config/controller/v1alpha1/defaults.go"
sed -i -e '/"github.com\/cert-manager\/cert-manager\/pkg\/controller\/certificaterequests\/venafi"$/d' \
  -e '/"github.com\/cert-manager\/cert-manager\/pkg\/controller\/certificatesigningrequests\/venafi"$/d' \
  -e 's/crvenaficontroller\.CRControllerName/"certificaterequests-issuer-venafi"/g' \
  -e 's/csrvenaficontroller\.CSRControllerName/"certificatesigningrequests-issuer-venafi"/g' "$defaults"
if grep -q venaficontroller "$defaults"; then
  echo "build.sh: $defaults still names a Venafi controller's package after the rewrite: update the sed expressions" >&2
  exit 1
fi
cp go.mod "$work/go.mod"
cp go.sum "$work/go.sum"
printf '\nreplace github.com/cert-manager/cert-manager => %s\n' "$work/cert-manager" >> "$work/go.mod"
mkdir -p "$OUT"
go build -trimpath -modfile "$work/go.mod" -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$(go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)" \
  -o "$OUT/" ./controller ./cainjector
