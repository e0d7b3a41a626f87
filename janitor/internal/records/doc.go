// Package records holds every write the janitor makes to what it owns (janitor rule 5's one exception,
// janitor/doc.go): its own annotations on a ForeignCluster (the cleanup record, the unpeering record, the
// grace window, the records of a removed mark), patched onto the version the pass read, and its records in
// its own namespace (the ConfigMaps liqo-janitor-records and liqo-janitor-released-volumes: probe targets,
// returns, the copy of released volumes). Package janitor's own files write nothing; .golangci.yml's
// forbidigo holds that.
package records
