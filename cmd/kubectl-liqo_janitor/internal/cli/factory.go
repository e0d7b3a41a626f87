// Package cli is what every command of the plugin gets (the way liqoctl's commands get
// pkg/liqoctl/factory): the IO streams, clients of the consumer from kubectl's kubeconfig flags, the API
// server's warnings, the operator's typed confirmations, and the few requests several verbs make (the
// ForeignCluster an argument names, who the API server takes the plugin to be, an annotations patch).
package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// Factory is what every command gets: the streams and the clients of the kubeconfig flags kubectl has
// (--kubeconfig, --context, --as, …), and the API server's warnings (the gate's, on unmarking).
type Factory struct {
	genericiooptions.IOStreams
	flags *genericclioptions.ConfigFlags

	mu       sync.Mutex
	warnings []string

	// stdin reads the typed confirmations, one line each, from one buffer.
	stdin *bufio.Reader
}

// NewFactory is the Factory of streams and the kubeconfig flags the root command registers.
func NewFactory(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *Factory {
	return &Factory{IOStreams: streams, flags: flags}
}

// RESTConfig is the consumer's REST config from the kubeconfig flags, its warnings collected.
func (f *Factory) RESTConfig() (*rest.Config, error) {
	cfg, err := f.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w (set --kubeconfig or --context as for kubectl)", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = f
	return cfg, nil
}

// HandleWarningHeaderWithContext collects the API server's warnings.
func (f *Factory) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warnings = append(f.warnings, text)
}

// PrintWarnings prints the warnings collected so far, once.
func (f *Factory) PrintWarnings() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.warnings {
		fmt.Fprintln(f.ErrOut, "Warning:", output.Printable(w))
	}
	f.warnings = nil
}

// DropWarnings forgets the warnings collected so far.
func (f *Factory) DropWarnings() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warnings = nil
}

// ReadLine reads one line the operator typed, without its line end.
func (f *Factory) ReadLine() (string, error) {
	if f.stdin == nil {
		f.stdin = bufio.NewReader(f.In)
	}
	line, err := f.stdin.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// Client is a client of the consumer, with the scheme of the types the plugin reads.
func (f *Factory) Client() (client.Client, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: liqojanitor.NewScheme()})
}

// MetadataClient is a metadata-only client of the consumer, as the janitor's plan lists with it.
func (f *Factory) MetadataClient() (metadata.Interface, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	return metadata.NewForConfig(cfg)
}
