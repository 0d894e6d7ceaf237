//go:build !unix

package server

// raiseFileLimit reports no limit where there is no RLIMIT_NOFILE.
func raiseFileLimit() (int, error) { return 0, nil }
