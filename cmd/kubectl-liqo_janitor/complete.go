package main

import (
	"context"
	"slices"
	"strings"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// completionClient is what a completion lists with: the command's context and the plugin's client; false,
// the reason told to the shell, when there is no client.
func (e *env) completionClient(cmd *cobra.Command) (context.Context, client.Client, bool) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := e.Client()
	if err != nil {
		cobra.CompErrorln(err.Error())
		return nil, nil, false
	}
	return ctx, c, true
}

// completeClusters is the ValidArgsFunction of a command whose argument names a ForeignCluster: the names
// and the cluster IDs of the ForeignClusters keep selects (all with nil), from the API server, each
// described by the other. kubectl asks for them through kubectl_complete-liqo_janitor, which runs
// `kubectl-liqo_janitor __complete <args>`; the kubeconfig flags typed on the line apply.
func (e *env) completeClusters(keep func(*liqov1beta1.ForeignCluster) bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, c, ok := e.completionClient(cmd)
		if !ok {
			return nil, cobra.ShellCompDirectiveError
		}
		var list liqov1beta1.ForeignClusterList
		if err := c.List(ctx, &list); err != nil {
			cobra.CompErrorln("listing ForeignClusters: " + err.Error())
			return nil, cobra.ShellCompDirectiveError
		}
		var names, ids []cobra.Completion
		for i := range list.Items {
			fc := &list.Items[i]
			name, id := fc.Name, string(fc.Spec.ClusterID)
			if (keep != nil && !keep(fc)) || !completable(name) {
				continue
			}
			if strings.HasPrefix(name, toComplete) {
				desc := "ForeignCluster"
				switch {
				case id == name:
					desc += " and cluster ID" // as Liqo names them
				case completable(id):
					desc += ", cluster ID " + id
				}
				names = append(names, cobra.CompletionWithDesc(name, desc))
			}
			if id != name && completable(id) && strings.HasPrefix(id, toComplete) {
				ids = append(ids, cobra.CompletionWithDesc(id, "cluster ID of ForeignCluster "+name))
			}
		}
		slices.Sort(names)
		slices.Sort(ids)
		return append(names, ids...), cobra.ShellCompDirectiveNoFileComp
	}
}

// completable: s can go to the shell as a completion, one word that output.Printable leaves as it is (a cluster
// ID is any string Liqo accepts: one with a space, a tab or a control character is left out).
func completable(s string) bool {
	return s != "" && output.Printable(s) == s && !strings.ContainsAny(s, " \t")
}

func isMarked(fc *liqov1beta1.ForeignCluster) bool { return liqojanitor.IsMarked(fc.Annotations) }

func isUnmarked(fc *liqov1beta1.ForeignCluster) bool { return !isMarked(fc) }

func isPaused(fc *liqov1beta1.ForeignCluster) bool { return liqojanitor.Paused(fc) }
