// Package release checks the release automation that cannot run here: the GitHub workflows decode into
// what GitHub Actions reads (strictly, YAML 1.2) and do what the project promises of a release, with the
// image CI builds (`make image`, tested in manifests/image) as the one the release pushes.
package release
