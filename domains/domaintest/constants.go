package domaintest

// Values every package's tests share, so that one package's servers are
// called alike from another's.
const (
	// AdminToken is test servers' admin token, past the minimum length.
	AdminToken = "pat_test_0123456789abcdef0123456789abcdef"
	// PlatformDomain is the platform's --domain in tests.
	PlatformDomain = "petstore.test"
	// CNAMETarget is where test domains point (127.0.0.1, where Pebble
	// validates).
	CNAMETarget = "cname.petstore.test"
	// CAAIdentity is tests' --acme-caa-identity, which CAA records must give.
	CAAIdentity = "pebble.test"
)
