package main

import (
	"k8s.io/client-go/metadata"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
)

// env is what every command gets (cli.Factory); the commands are its methods.
type env struct {
	*cli.Factory
}

func (e *env) metadataClient() (metadata.Interface, error) {
	cfg, err := e.RESTConfig()
	if err != nil {
		return nil, err
	}
	return metadata.NewForConfig(cfg)
}
