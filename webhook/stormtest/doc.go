// Package stormtest tries the gate's storm guard (rule 21 of package webhook) through a real API server of
// its own: the storm count spans every ForeignCluster of the cluster, so its tests need a cluster where
// they alone lay out the providers, one test after the other — not the shared one of package webhook's
// tests, whose providers, left unreachable, would be a storm for every mark.
package stormtest
