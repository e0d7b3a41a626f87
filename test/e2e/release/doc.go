// Package release checks the release automation that cannot run here: the GitHub workflows decode into
// what GitHub Actions reads (strictly, YAML 1.2) and do what the project promises of a release, and
// .ko.yaml builds the binary the way the image test checks it.
package release
