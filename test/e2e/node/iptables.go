package node

import (
	"errors"
	"slices"
	"strings"
)

// chainPrefixes name the iptables chains the node's components create: the kubelet's KUBE-FIREWALL,
// KUBE-KUBELET-CANARY and KUBE-IPTABLES-HINT, kube-proxy's KUBE-SERVICES and the rest, and the CNI
// bridge plugin's CNI-* masquerading chains.
var chainPrefixes = []string{"KUBE-", "CNI-"}

var iptablesTables = []string{"mangle", "nat", "filter"}

// chains returns the node's chains that exist now, as "TOOL TABLE CHAIN", for IPv4 and IPv6.
func chains() map[string]bool {
	out := map[string]bool{}
	for _, tool := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			rules, err := run(tool, "-w", "-t", table, "-S")
			if err != nil {
				continue
			}
			for _, line := range strings.Split(rules, "\n") {
				if chain, ok := strings.CutPrefix(line, "-N "); ok && hasChainPrefix(chain) {
					out[tool+" "+table+" "+chain] = true
				}
			}
		}
	}
	return out
}

func hasChainPrefix(chain string) bool {
	for _, p := range chainPrefixes {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

// removeChains deletes the node's chains that did not exist before Start, and every rule that jumps to
// them, wherever it is (a built-in chain's jump to KUBE-FIREWALL as much as kube-proxy's own).
func (n *Node) removeChains() error {
	var errs []error
	for _, tool := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			errs = append(errs, n.removeChainsOf(tool, table))
		}
	}
	return errors.Join(errs...)
}

func (n *Node) removeChainsOf(tool, table string) error {
	rules, err := run(tool, "-w", "-t", table, "-S")
	if err != nil {
		return nil //nolint:nilerr // no such table: nothing of ours in it
	}
	var created []string
	for _, line := range strings.Split(rules, "\n") {
		if chain, ok := strings.CutPrefix(line, "-N "); ok && hasChainPrefix(chain) && !n.chainsBefore[tool+" "+table+" "+chain] {
			created = append(created, chain)
		}
	}
	if len(created) == 0 {
		return nil
	}
	var errs []error
	for _, line := range strings.Split(rules, "\n") {
		rule, ok := strings.CutPrefix(line, "-A ")
		if chain, _, _ := strings.Cut(rule, " "); !ok || slices.Contains(created, chain) {
			continue // a rule of a chain of ours goes with its chain
		}
		for _, c := range created {
			if strings.HasSuffix(rule, " -j "+c) || strings.Contains(rule, " -j "+c+" ") {
				// the rule as listed, deleted by specification (quotes of comments as -S prints them)
				_, err := run("sh", "-c", tool+" -w -t "+table+" -D "+rule)
				errs = append(errs, err)
				break
			}
		}
	}
	for _, c := range created {
		_, _ = run(tool, "-w", "-t", table, "-F", c)
	}
	for _, c := range created {
		_, err := run(tool, "-w", "-t", table, "-X", c)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
