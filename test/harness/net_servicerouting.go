package harness

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceRoute makes the API server reach a Service of an installed chart at a process on this machine:
// an EndpointSlice of the Service whose one endpoint is the machine's address (HostAddress) and the given
// port. With Options.ServiceRouting, the API server calls a webhook configured with that Service there,
// verifying the served certificate for the Service's DNS name (<name>.<namespace>.svc), as in a cluster.
// Without kube-proxy the Service's ClusterIP leads nowhere; kube-controller-manager's EndpointSlice
// controller, which would write the slice from the Service's pods, does not run (there are no pods).
func (e *Env) ServiceRoute(ctx context.Context, namespace, service string, port int) (*discoveryv1.EndpointSlice, error) {
	svc := &corev1.Service{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: service}, svc); err != nil {
		return nil, fmt.Errorf("reading the Service to route: %w", err)
	}
	addr, err := HostAddress()
	if err != nil {
		return nil, err
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: service + "-harness", Labels: map[string]string{
			discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: harnessFieldOwner}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	// The API server picks the slice's port named as the Service port the webhook names (proxy.ResolveEndpoint
	// in k8s.io/apiserver): every port of the Service leads to the process's one port.
	for _, p := range svc.Spec.Ports {
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)})
	}
	if err := e.Client.Create(ctx, slice); err != nil {
		return nil, fmt.Errorf("creating the EndpointSlice of Service %s/%s: %w", namespace, service, err)
	}
	return slice, nil
}

// HostAddress is this machine's address on its default route: not loopback, which the API server refuses
// in an EndpointSlice (ValidateEndpointIP), so a Service routed to a process here (ServiceRoute) needs it
// and the process must listen on it (or on every address); and what a pod on this machine reaches the
// machine at (the node lane's API server advertises it, Options.AdvertiseAddress).
func HostAddress() (net.IP, error) {
	// A UDP "connection" sends nothing; it only picks the route's source address.
	conn, err := net.Dial("udp4", "203.0.113.1:9")
	if err != nil {
		return nil, fmt.Errorf("finding the machine's address on its default route: %w", err)
	}
	defer func() { _ = conn.Close() }()
	return conn.LocalAddr().(*net.UDPAddr).IP.To4(), nil
}
