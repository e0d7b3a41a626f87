// Package manifests tests the install under manifests/ against a real API server: every kustomization
// builds as `kubectl apply -k` builds it, decodes into known types, applies with server-side apply, grants
// no more than the code needs, runs a hardened Deployment, and the ValidatingAdmissionPolicy fallback
// really refuses unconfirmed marks on its own.
package manifests
