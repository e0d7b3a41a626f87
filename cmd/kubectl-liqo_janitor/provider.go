package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/provider"
)

// The provider fence's verbs (package provider), run on a provider with its admin's kubeconfig.

// fenceCredentialCommand is `fence-credential`: its flags into provider.CredentialOptions.
func (e *env) fenceCredentialCommand() *cobra.Command {
	o := &provider.CredentialOptions{Factory: e.Factory}
	cmd := &cobra.Command{
		Use:   "fence-credential <consumer cluster ID> [--provider-server <url>] [--revoke]",
		Short: "On a provider: make (or revoke) a consumer's credential for its provider-fence Lease, and print its kubeconfig",
		Long: `fence-credential runs on a provider, with its admin's kubeconfig. In the tenant namespace Liqo made for the
consumer (labels ` + liqojanitor.RemoteClusterIDLabel + `=<consumer cluster ID> and ` + liqojanitor.TenantNamespaceLabel + `), it makes, idempotently,
the ServiceAccount, Role and RoleBinding ` + liqojanitor.FenceCredentialName + ` — the Role may only get, update and patch the Lease
` + liqojanitor.FenceLeaseName + ` — and the token Secret ` + provider.TokenSecretName + `, waits for Kubernetes to fill the token, and prints a
kubeconfig (the provider's API server and CA, the token, no exec plugin) on stdout. Hand it to the consumer's
admin: their liqo-janitor renews the Lease with it, and the provider fence agent stops the consumer's pods here
once the renewals stop (docs/provider-fence.md). stderr says how they store it, and warns when the consumer's
Tenant does not carry ` + liqojanitor.FenceAfterAnnotation + ` (the agent ignores the consumer until it does).
--revoke deletes the four objects: the token no longer authenticates.`,
		Example: `  # the credential of consumer 0f8a2d7c-consumer, for the consumer's admin
  kubectl liqo-janitor fence-credential 0f8a2d7c-consumer > fence.kubeconfig

  # the consumer reaches this provider's API server at another address than this kubeconfig's
  kubectl liqo-janitor fence-credential 0f8a2d7c-consumer --provider-server https://provider.example:6443 > fence.kubeconfig

  # revoke it
  kubectl liqo-janitor fence-credential 0f8a2d7c-consumer --revoke`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeConsumers,
		RunE:              runForConsumer(&o.Consumer, o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Server, "provider-server", "", "this provider's API server as the consumer reaches it, in the kubeconfig printed "+
		"(default: the server of this kubeconfig's context)")
	f.BoolVar(&o.Revoke, "revoke", false, "delete the consumer's credential (ServiceAccount, Role, RoleBinding, token Secret) instead")
	f.StringVar(&o.LiqoNamespace, "liqo-namespace", liqojanitor.DefaultLiqoNamespace, "the namespace of Liqo's cluster-ID ConfigMap on this provider")
	f.StringVar(&o.ConsumerJanitorNamespace, "consumer-janitor-namespace", "liqo-janitor-system",
		"liqo-janitor's namespace on the consumer, in the command printed for the consumer's admin")
	f.DurationVar(&o.Timeout, "timeout", time.Minute, "how long to wait for Kubernetes to fill the token Secret")
	return cmd
}

// unfenceCommand is `unfence`: its flags into provider.UnfenceOptions.
func (e *env) unfenceCommand() *cobra.Command {
	o := &provider.UnfenceOptions{Factory: e.Factory}
	cmd := &cobra.Command{
		Use:   "unfence <consumer cluster ID> --confirm=<consumer cluster ID>",
		Short: "On a provider: clear the provider fence's latched fence of a consumer that is back",
		Long: `unfence runs on a provider, with its admin's kubeconfig, once a consumer the provider fence fenced is back and
should run here again. The fence is latched (renewals change nothing): unfence clears the agent's record of it
(` + liqojanitor.FenceStateLeaseName + ` in the consumer's tenant namespace: the fence and the arming, the last observation
kept), so that the agent fences again only once a renewal it observes re-arms it; sets the consumer's Tenant Active
again only if it is Cordoned and the fence cordoned it (` + liqojanitor.CordonedByFenceAnnotation + `), and removes the fence's
marks from it; and removes the copy of the record from the consumer's Lease. Every write is a patch at the
resourceVersion read. Without a fence it changes nothing.`,
		Example:           `  kubectl liqo-janitor unfence 0f8a2d7c-consumer --confirm=0f8a2d7c-consumer`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeConsumers,
		RunE:              runForConsumer(&o.Consumer, o),
	}
	cmd.Flags().StringVar(&o.Confirm, "confirm", "", "the consumer's cluster ID, typed again")
	return cmd
}

// completeConsumers is the ValidArgsFunction of the provider's verbs: the cluster IDs of the consumers
// this provider has a tenant namespace of.
func (e *env) completeConsumers(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, c, ok := e.completionClient(cmd)
	if !ok {
		return nil, cobra.ShellCompDirectiveError
	}
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss, client.HasLabels{liqojanitor.TenantNamespaceLabel, liqojanitor.RemoteClusterIDLabel}); err != nil {
		cobra.CompErrorln("listing tenant namespaces: " + err.Error())
		return nil, cobra.ShellCompDirectiveError
	}
	var ids []cobra.Completion
	for i := range nss.Items {
		id := nss.Items[i].Labels[liqojanitor.RemoteClusterIDLabel]
		if completable(id) && strings.HasPrefix(id, toComplete) {
			ids = append(ids, cobra.CompletionWithDesc(id, "consumer, tenant namespace "+nss.Items[i].Name))
		}
	}
	slices.Sort(ids)
	return ids, cobra.ShellCompDirectiveNoFileComp
}

// runForConsumer is the RunE of a provider's verb: the consumer's cluster ID from the argument into
// *consumer, then o validated and run.
func runForConsumer(consumer *string, o interface {
	Validate() error
	Run(context.Context) error
}) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		*consumer = args[0]
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
