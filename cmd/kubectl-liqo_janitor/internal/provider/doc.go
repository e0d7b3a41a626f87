// Package provider is the plugin's provider-side verbs of the provider fence (go doc ./janitor/providerfence),
// run with a provider's admin credentials: fence-credential makes, prints and revokes a consumer's
// credential for its Lease liqo-janitor-fence, and unfence clears a latched fence (fence rule 6). Both find
// the consumer as Liqo and the agent do: its tenant namespace by labels, its Tenant by spec.clusterID.
package provider
