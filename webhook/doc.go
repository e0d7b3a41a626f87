// Package webhook is the gate: the mutating and validating admission webhooks on Liqo ForeignClusters
// that make declaring a provider permanently unreachable a confirmed, authorised and audited act.
//
// The decision is a pure function (Decide, Stamp) of the old and new objects, the requesting user, the
// local cluster ID, the result of the break-glass SubjectAccessReview and the time; the handlers in gate.go
// only gather those inputs.
package webhook
