package harness

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
)

// rbacDenial matches the API server's refusal by RBAC of a ServiceAccount's request, as it reaches a
// client (`pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API group
// "" at the cluster scope`), also inside a JSON log line (quotes escaped); not an admission webhook's or a
// policy's refusal, which never says "cannot".
var rbacDenial = regexp.MustCompile(`User \\?"(system:serviceaccount:[^"\\]+)\\?" cannot [a-z]+ (?:resource \\?"[^"\\]+\\?"(?: in API group \\?"[^"\\]*\\?")?(?: at the cluster scope| in the namespace \\?"[^"\\]+\\?")?|path \\?"[^"\\]+\\?")`)

// recordDenials notes every RBAC refusal of user in text (a replica's log, a response body): a
// permission the code needs and the chart lacks. Run fails the test package when there is one.
func (e *Env) recordDenials(user string, text []byte) {
	found := rbacDenial.FindAllSubmatch(text, -1)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, d := range found {
		if string(d[1]) != user {
			continue
		}
		if e.denials == nil {
			e.denials = map[string]bool{}
		}
		e.denials[strings.ReplaceAll(string(d[0]), `\"`, `"`)] = true
	}
}

// RecordLogDenials reads the log of a replica the harness did not start (a pod's, in the node lane) for
// RBAC refusals of user, which then fail the test package as those of the harness's replicas do.
func (e *Env) RecordLogDenials(user, path string) { e.recordLogDenials(user, path) }

// recordLogDenials reads a replica's log for RBAC refusals of user (recordDenials).
func (e *Env) recordLogDenials(user, path string) {
	if data, err := os.ReadFile(path); err == nil {
		e.recordDenials(user, data)
	}
}

// RBACDenials lists the distinct refusals by RBAC of the ServiceAccount the harness runs the product as
// (in the binary's replicas' logs, and in the answers to the in-process managers' clients): each is a
// permission the code asked for and the install does not grant.
func (e *Env) RBACDenials() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for d := range e.denials {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// denialRecorder is a RoundTripper that hands the body of every 403 answer to record (RBAC refusals).
type denialRecorder struct {
	next   http.RoundTripper
	record func([]byte)
}

func (d denialRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	body, readErr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if readErr == nil {
		d.record(body)
	}
	return resp, nil
}
