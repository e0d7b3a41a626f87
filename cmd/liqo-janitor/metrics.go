package main

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// RBAC of the metrics endpoint's own authentication and authorization (controller-runtime's filter: a
// TokenReview of the scraper's token, a SubjectAccessReview of verb get on the non-resource URL /metrics),
// generated into the chart by `make manifests`. Scrapers get the ClusterRole liqo-janitor:metrics-reader.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves /metrics the way kubebuilder scaffolds it today: over HTTPS, to scrapers whose
// token the API server authenticates and who may get /metrics (filters.WithAuthenticationAndAuthorization),
// with the webhook's serving certificate (so the ServiceMonitor trusts the same CA: the managed one in
// --cert-management=self, through tlsOpts' GetCertificate, else the files of --webhook-cert-dir) unless
// --metrics-cert-dir names another; plain HTTP only with --metrics-secure=false.
func metricsOptions(o *options, tlsOpts []func(*tls.Config)) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.metricsAddr, TLSOpts: tlsOpts}
	if !o.metricsSecure {
		return m
	}
	m.SecureServing, m.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	m.CertDir = o.metricsCertDir
	if m.CertDir == "" && o.enableWebhook {
		m.CertDir = o.webhookCertDir
	}
	return m
}
