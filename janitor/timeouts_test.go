package janitor_test

import (
	"time"

	. "github.com/onsi/gomega"
)

// What a test awaits from a janitor against a real API server is due within seconds, but these machines
// are shared and loaded: an Eventually without its own timeout gets 30 s rather than gomega's 1 s (a
// test that asserts promptness says so with its own WithTimeout).
func init() {
	SetDefaultEventuallyTimeout(30 * time.Second)
}
