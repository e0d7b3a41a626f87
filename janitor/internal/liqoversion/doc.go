// Package liqoversion tells which Liqo is installed beside the janitor (janitor rule 12): a Detector reads
// it from what Liqo installed — the image tag of its controller-manager Deployment, else the CRDs — at most
// once a minute, and a Version says whether that Liqo is older than a given v1 minor version. Reading
// only: it writes nothing.
package liqoversion
