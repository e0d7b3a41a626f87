package node

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Switch is the environment variable that turns the lane on (`make e2e` sets it): `make test` and `make
// test-unit` run every package of this module, and this one must not start a node there.
const Switch = "LIQO_JANITOR_NODE_LANE"

// lane is what TestMain's setup brought up, for the tests.
var lane struct {
	node    *Node
	image   string
	release *action.Configuration
}

func TestMain(m *testing.M) {
	if os.Getenv(Switch) == "" {
		fmt.Println("node lane not run: `make e2e` runs it (Linux, root)")
		os.Exit(0)
	}
	root, err := harness.RepoRoot()
	if err != nil {
		fail(err.Error())
	}
	bin, images := filepath.Join(root, "bin", "node"), []string{filepath.Join(root, "bin", "image", "liqo-janitor.tar")}
	if missing := Missing(bin, images...); len(missing) > 0 {
		fail("the node lane cannot run:\n  " + strings.Join(missing, "\n  "))
	}
	lock, err := Lock()
	if err != nil {
		fail(err.Error())
	}
	defer func() { _ = lock.Close() }() // os.Exit skips it: the process's end releases the lock
	ip, err := harness.HostAddress()
	if err != nil {
		fail(err.Error())
	}
	addr := ip.String()
	os.Exit(harness.Run(m, harness.Options{AdvertiseAddress: addr, ControllerManager: true}, func(e *harness.Env) error {
		return setUp(e, Config{Bin: bin, Kubeconfig: e.KubeconfigPath, ClientCAFile: e.ClientCAFile(), Address: addr, Images: images})
	}))
}

// fail ends the run as failed: the lane was asked for and cannot run, which is not a skip.
func fail(msg string) {
	fmt.Fprintln(os.Stderr, "FAIL:", msg)
	os.Exit(1)
}

// setUp starts the node and installs the chart; Env.Go's service tears both down when the harness stops
// (before the control plane).
func setUp(e *harness.Env, cfg Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	image, err := imageRef(cfg.Images[0])
	if err != nil {
		return err
	}
	n, err := Start(ctx, e.Client, cfg)
	if err != nil {
		return err
	}
	lane.node, lane.image = n, image
	e.Go(func(ctx context.Context) error {
		<-ctx.Done()
		recordDenials(e, n)
		return n.Stop(context.Background(), e.Client)
	})
	return install(ctx, e, image)
}

// recordDenials hands the replicas' logs (the kubelet's pod log files) to the harness, which fails the run
// on any RBAC refusal of the chart's ServiceAccount in them: a permission the code needs and the chart
// lacks.
func recordDenials(e *harness.Env, n *Node) {
	logs, _ := filepath.Glob(filepath.Join(n.PodLogs(), manifests.ReleaseNamespace+"_*", "*", "*.log"))
	for _, l := range logs {
		sa := manifests.ReleaseName
		if strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(l))), manifests.ReleaseNamespace+"_"+fenceDeploymentKey.Name+"-") {
			sa = fenceDeploymentKey.Name // the provider fence's pods run as its own ServiceAccount
		}
		e.RecordLogDenials("system:serviceaccount:"+manifests.ReleaseNamespace+":"+sa, l)
	}
}

// imageRef reads the reference a docker-loadable tarball tags its image with (manifest.json's RepoTags),
// the name containerd imports it under.
func imageRef(tarball string) (string, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s has no manifest.json", tarball)
		}
		if err != nil {
			return "", err
		}
		if hdr.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return "", fmt.Errorf("reading %s's manifest.json: %w", tarball, err)
		}
		if len(m) != 1 || len(m[0].RepoTags) != 1 {
			return "", fmt.Errorf("%s: want one image with one tag, got %+v", tarball, m)
		}
		return m[0].RepoTags[0], nil
	}
}

// install installs the chart with the Helm library, with its defaults but the image: the one imported into
// containerd, never pulled. Liqo's namespace, which the chart grants the janitor rights in, and its
// cluster-ID ConfigMap, which the gate reads, exist as Liqo's install leaves them.
func install(ctx context.Context, e *harness.Env, image string) error {
	if err := e.InstallLocalClusterID(ctx, "liqo", localClusterID); err != nil {
		return err
	}
	flags := genericclioptions.NewConfigFlags(false)
	ns := manifests.ReleaseNamespace
	flags.KubeConfig, flags.Namespace = &e.KubeconfigPath, &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		return err
	}
	ch, err := manifests.Chart()
	if err != nil {
		return err
	}
	repo, tag, _ := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	repo = image[:strings.LastIndex(image, "/")+1] + repo
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.WaitStrategy = manifests.ReleaseName, ns, true, kube.HookOnlyStrategy
	values := map[string]any{"image": map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		// this cluster is a provider too: the provider fence, with the node lane's short settings
		"providerFence": map[string]any{"enabled": true, "poll": fencePoll.String(), "graceCap": fenceGraceCap.String()}}
	if _, err := in.RunWithContext(ctx, ch, values); err != nil {
		return fmt.Errorf("helm install: %w", err)
	}
	lane.release = cfg
	return waitAvailable(ctx, e.Client)
}

// deploymentKey is the chart's Deployment; fenceDeploymentKey the provider fence's.
var (
	deploymentKey      = client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: manifests.ReleaseName}
	fenceDeploymentKey = client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: "liqo-janitor-provider-fence"}
)

// chartServices are the chart's Services: the webhooks' and the metrics'.
var chartServices = []string{"liqo-janitor-webhook", "liqo-janitor-metrics"}

// waitAvailable waits for every replica of the chart's Deployment to be Ready and for the chart's Services
// to be reachable: a Ready endpoint reaches kube-proxy's rules a moment later (until then the ClusterIP
// refuses connections, and so the API server would, calling the gate).
func waitAvailable(ctx context.Context, c client.Client) error {
	if err := waitDeployment(ctx, c, deploymentKey); err != nil {
		return err
	}
	if err := waitDeployment(ctx, c, fenceDeploymentKey); err != nil {
		return err
	}
	for _, name := range chartServices {
		if err := waitServiceReachable(ctx, c, name); err != nil {
			return err
		}
	}
	return nil
}

// waitServiceReachable waits for a TCP connection to the Service's ClusterIP, from this machine, where the
// API server runs, to succeed.
func waitServiceReachable(ctx context.Context, c client.Client, name string) error {
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: name}, &svc); err != nil {
		return err
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	var last error
	dialer := &net.Dialer{Timeout: time.Second}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if last = err; err != nil {
			return false, nil //nolint:nilerr // no endpoint in kube-proxy's rules yet: poll again
		}
		return true, conn.Close()
	})
	if err != nil {
		return fmt.Errorf("waiting for Service %s (%s) to accept connections: %w", name, addr, errors.Join(err, last))
	}
	return nil
}

// waitDeployment waits for every replica of a Deployment of the chart to be Ready.
func waitDeployment(ctx context.Context, c client.Client, key client.ObjectKey) error {
	var last appsv1.DeploymentStatus
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := lane.node.Exited(); err != nil {
			return false, err
		}
		var d appsv1.Deployment
		if err := c.Get(ctx, key, &d); err != nil {
			return false, err
		}
		last = d.Status
		return d.Spec.Replicas != nil && d.Status.ObservedGeneration == d.Generation &&
			d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
			d.Status.Replicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the replicas of %s to be Ready (status %+v; node logs in %s): %w", key, last, lane.node.Dir(), err)
	}
	return nil
}
