package harness

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestAReplicaTakesTheDeploymentsArgumentsButWhatThisMachineNeeds: the container's arguments stay, in
// their order, but for the flags the harness overrides; the pod's own namespace is given by hand where
// the Deployment leaves it to the namespace file; the harness's flags come last, so a test's after them win.
func TestAReplicaTakesTheDeploymentsArgumentsButWhatThisMachineNeeds(t *testing.T) {
	t.Parallel()
	f := replicaFlags{kubeconfig: "/h/sa.kubeconfig", webhookCertDir: "/h/certs", probe: "127.0.0.1:1", metrics: "127.0.0.1:2", webhookPort: 3}
	own := []string{"--kubeconfig=/h/sa.kubeconfig", "--webhook-port=3", "--webhook-cert-dir=/h/certs", "--cert-management=none",
		"--health-probe-bind-address=127.0.0.1:1", "--metrics-bind-address=127.0.0.1:2", "--metrics-secure=false"}
	tests := map[string]struct {
		args []string
		want []string
	}{
		"the chart's arguments, ports and paths replaced": {
			args: []string{"--leader-elect=true", "--webhook-port=9443", "--cert-management=cert-manager",
				"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs", "--metrics-bind-address=:8080", "--metrics-secure=true",
				"--health-probe-bind-address=:8081"},
			want: append([]string{"--leader-elect=true", "--namespace=release"}, own...),
		},
		"the chart's own certificates served from the harness's": {
			args: []string{"--cert-management=self", "--webhook-service=liqo-janitor-webhook", "--webhook-configuration=liqo-janitor"},
			want: append([]string{"--webhook-service=liqo-janitor-webhook", "--webhook-configuration=liqo-janitor",
				"--namespace=release"}, own...),
		},
		"a namespace the Deployment names is kept": {
			args: []string{"--namespace=elsewhere"},
			want: append([]string{"--namespace=elsewhere"}, own...),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inst := &Install{Namespace: "release", ServiceAccount: "sa", Container: corev1.Container{Args: tc.args}}
			if got := f.args(inst); !slices.Equal(got, tc.want) {
				t.Fatalf("args =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestAReplicasEnvironmentIsTheContainersWithTheDownwardAPIByHand: literal values as they are; the pod's
// namespace, name and ServiceAccount from the downward API given by hand; a source the harness cannot
// stand in for is an error, never a silent empty value.
func TestAReplicasEnvironmentIsTheContainersWithTheDownwardAPIByHand(t *testing.T) {
	t.Parallel()
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	tests := map[string]struct {
		env     []corev1.EnvVar
		envFrom []corev1.EnvFromSource
		want    []string
		wantErr bool
	}{
		"none":    {},
		"literal": {env: []corev1.EnvVar{{Name: "GOMAXPROCS", Value: "2"}}, want: []string{"GOMAXPROCS=2"}},
		"the downward API": {env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
			{Name: "POD_NAME", ValueFrom: field("metadata.name")}, {Name: "SA", ValueFrom: field("spec.serviceAccountName")}},
			want: []string{"POD_NAMESPACE=release", "POD_NAME=replica-a", "SA=sa"}},
		"a node's name":  {env: []corev1.EnvVar{{Name: "NODE", ValueFrom: field("spec.nodeName")}}, wantErr: true},
		"a Secret's key": {env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "x"}}}}, wantErr: true},
		"envFrom":        {envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inst := &Install{Namespace: "release", ServiceAccount: "sa", Container: corev1.Container{Env: tc.env, EnvFrom: tc.envFrom}}
			got, err := inst.processEnv("replica-a")
			if (err != nil) != tc.wantErr {
				t.Fatalf("processEnv() error = %v, want an error: %t", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("processEnv() = %q, want %q", got, tc.want)
			}
		})
	}
}
