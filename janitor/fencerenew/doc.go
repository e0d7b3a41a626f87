// Package fencerenew is the consumer's side of the provider fence (issue 37, design revision 5): the
// janitor's leader renews, on every provider it holds a fence credential for, the Lease the provider's
// agent (janitor/providerfence) observes, and keeps in its own namespace what it needs to know when that
// provider has surely fenced this consumer — computed from the provider's published contract alone, on
// this cluster's clock. The gate refuses a mark, and the janitor every release, before then.
//
// # The renewer's rules
//
// The code cites them as "renew rule N".
//
//  1. A credential, and nothing else: a provider is renewed only with the kubeconfig of a Secret labelled
//     liqo-janitor.io/provider-fence=<provider cluster ID> in the janitor's namespace, under the key
//     kubeconfig, with inline credentials only (a token or a client certificate, never an exec plugin, an
//     auth provider or a file), and the provider's CA (TLS verified, never skipped).
//  2. A renewal is an update of the Lease at the resourceVersion read, writing spec.holderIdentity (this
//     consumer's cluster ID), spec.renewTime and spec.leaseDurationSeconds (the renew interval, which the
//     agent checks its fenceAfter against), every --fence-renew-interval, each request bounded by half of
//     it, on a connection of its own (no keep-alive: a renewal that was never written is known not to
//     have landed).
//  3. Acknowledged: a renewal counts as acknowledged only when its response carries a contract naming the
//     provider's cluster ID the Secret is labelled with, armed-at, and seen-rv equal to the
//     resourceVersion of this leader's previous renewal: the agent is alive and observing, with no clock
//     compared. lastAck is this cluster's time when that response arrived.
//  4. What may have landed counts: lastLanded is the latest moment a renewal may have reached the
//     provider — a response's arrival, or for a renewal written whose answer never came, its sending plus
//     the request timeout. The provider's deadline runs from its observation of the last renewal that
//     landed, so the consumer's runs from lastLanded: deadline = lastLanded + the contract's SafeAfter.
//     Both are kept in the ConfigMap liqo-janitor-fence-renewals of the janitor's namespace, written after
//     every renewal that changed them: they survive restarts and failovers.
//  5. Never renewed once marked: before every renewal the ForeignClusters of that cluster ID are read live;
//     one that carries the mark stops the renewals for that mark (recorded), so that a consumer that gave a
//     provider up never keeps its copies alive after a heal. An unmark resumes them.
//  6. Seen: the age of the last acknowledged renewal and the provider's fenceAfter are metrics (an alert
//     fires at half of fenceAfter: the provider may fence us); a provider that fenced this consumer while
//     its ForeignCluster is not marked (a renewer outage) gets a Warning event with the next step.
package fencerenew

// RBAC of the renewer: the ForeignClusters (live reads), events; its Secrets and ConfigMap are in the
// janitor's namespace, granted by the chart's Role there (templates/brake-rbac.yaml).
// +kubebuilder:rbac:groups=core.liqo.io,resources=foreignclusters,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
