package janitor

// RemoveFinalizer exposes removeFinalizer to the real-API-server tests of package janitor_test.
var RemoveFinalizer = removeFinalizer

// Outcomes of RemoveFinalizer the tests assert.
const (
	Released = released
	Gone     = gone
)
