package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// env is what every command gets: the streams and the clients of the kubeconfig flags kubectl has
// (--kubeconfig, --context, --as, …), and the API server's warnings (the gate's, on unmarking).
type env struct {
	genericiooptions.IOStreams
	flags *genericclioptions.ConfigFlags

	mu       sync.Mutex
	warnings []string

	// stdin reads the typed confirmations, one line each, from one buffer.
	stdin *bufio.Reader
}

func (e *env) restConfig() (*rest.Config, error) {
	cfg, err := e.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w (set --kubeconfig or --context as for kubectl)", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = e
	return cfg, nil
}

// HandleWarningHeaderWithContext collects the API server's warnings.
func (e *env) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.warnings = append(e.warnings, text)
}

// printWarnings prints the warnings collected so far, once.
func (e *env) printWarnings() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.warnings {
		fmt.Fprintln(e.ErrOut, "Warning:", output.Printable(w))
	}
	e.warnings = nil
}

// dropWarnings forgets the warnings collected so far.
func (e *env) dropWarnings() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.warnings = nil
}

// readLine reads one line the operator typed, without its line end.
func (e *env) readLine() (string, error) {
	if e.stdin == nil {
		e.stdin = bufio.NewReader(e.In)
	}
	line, err := e.stdin.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func (e *env) client() (client.Client, error) {
	cfg, err := e.restConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: liqojanitor.NewScheme()})
}

func (e *env) metadataClient() (metadata.Interface, error) {
	cfg, err := e.restConfig()
	if err != nil {
		return nil, err
	}
	return metadata.NewForConfig(cfg)
}

// resolve is the client and the ForeignCluster an argument names.
func (e *env) resolve(ctx context.Context, arg string) (client.Client, *liqov1beta1.ForeignCluster, error) {
	c, err := e.client()
	if err != nil {
		return nil, nil, err
	}
	fc, err := foreignCluster(ctx, c, arg)
	return c, fc, err
}

// foreignCluster finds the ForeignCluster an argument names: its name, or its spec.clusterID.
func foreignCluster(ctx context.Context, c client.Client, arg string) (*liqov1beta1.ForeignCluster, error) {
	var fcs liqov1beta1.ForeignClusterList
	if err := c.List(ctx, &fcs); err != nil {
		return nil, fmt.Errorf("listing ForeignClusters: %w", err)
	}
	var byID []*liqov1beta1.ForeignCluster
	for i := range fcs.Items {
		fc := &fcs.Items[i]
		if fc.Name == arg {
			return fc, nil
		}
		if string(fc.Spec.ClusterID) == arg {
			byID = append(byID, fc)
		}
	}
	switch len(byID) {
	case 1:
		return byID[0], nil
	case 0:
		return nil, fmt.Errorf("no ForeignCluster is named %q or has that cluster ID: list them with kubectl get foreignclusters", arg)
	}
	return nil, fmt.Errorf("%d ForeignClusters have cluster ID %q: name one of them (kubectl get foreignclusters)", len(byID), arg)
}
