package main

import (
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
)

// env is what every command gets (cli.Factory); the commands are its methods.
type env struct {
	*cli.Factory
}
