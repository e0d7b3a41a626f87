// Package release is every write liqo-janitor makes to an object it does not own: janitor rule 5
// (janitor/doc.go). A finalizer is removed only with a JSON patch that tests the object's UID and the exact
// list entry, so a concurrent writer's entries are never lost, the list is never replaced wholesale and a
// re-created object of the same name is never touched (RemoveFinalizer, RemoveFinalizerIf); a pod is
// deleted only with grace period 0 and a UID precondition, and its finalizers are never stripped
// (ForceDeletePod). Nothing that is not being deleted is written (rule 6), but a pod the caller says Liqo's
// drain selects. Each write says what became of its object (Outcome), and a write another admission webhook
// refused is told from any other failure (RefusingWebhook, rule 11).
//
// Which objects, and which finalizers of the allow-list, are the caller's to decide (the targets of package
// janitor); this package only writes them so. Outside it, janitor/ writes only what the janitor owns — its
// annotations on a ForeignCluster, its records in its own namespace, events — and a lint rule
// (forbidigo in .golangci.yml) fails on any other object write there.
package release
