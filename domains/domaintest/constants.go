package domaintest

// Values the tests of every package share, so that a server set up by one
// package's helpers is called the same way from another's.
const (
	// AdminToken is the operator's token of test servers: long enough for
	// the service's minimum of 32 characters.
	AdminToken = "pat_test_0123456789abcdef0123456789abcdef"
	// PlatformDomain is the platform's --domain in tests.
	PlatformDomain = "petstore.test"
	// CNAMETarget is where test domains point, resolving to 127.0.0.1 where
	// Pebble validates.
	CNAMETarget = "cname.petstore.test"
	// CAAIdentity is the --acme-caa-identity of tests: the name CAA records
	// must give for Pebble to be allowed to issue.
	CAAIdentity = "pebble.test"
)
