// Package storm tries the gate's storm guard (gate rule 21) through a real API server of its own, with the
// gate served as the binary serves it by default (liqojanitor.DefaultStormGuard). It holds no product and
// no test of package webhook could share it: the storm count spans every ForeignCluster of the cluster,
// so its tests need a cluster where they alone lay out the providers, one test after the other, while
// package webhook's tests run their gate without the storm guard and leave providers unreachable, which
// would be a storm for every mark here.
package storm
