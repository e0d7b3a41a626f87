// Package node is the node lane (`make e2e`, Linux and root only): the chart installed by the Helm library
// runs from the project's image on a real kubelet, with containerd, runc and a bridge CNI, against the
// harness's control plane plus kube-scheduler and kube-proxy. Its tests assert what only pods show: the
// replicas become Ready under the chart's probes and security context, the API server reaches the gate
// through the chart's Service, one replica leads and hands over when its pod is killed, a drain keeps what
// the PodDisruptionBudget asks, the metrics answer a ServiceAccount token over HTTPS, the
// dead-provider story (mark, release, return, fence) runs against the installed pods, and a StatefulSet
// replica whose volume was pinned to a dead provider runs again on the node once release-volumes
// releases it.
//
// Node brings the node up and tears it all down again (processes, mounts, the bridge, iptables rules,
// cgroups, files). Nothing is pulled: the pod sandbox image is built from manifests/pause and the
// product's from `make image`, both imported into containerd.
package node
