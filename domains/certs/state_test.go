package certs

import (
	"testing"
	"time"

	"petstore/store"
)

// A renewal that starts or fails after the certificate expired keeps it
// expired; before that, it is renewing, then issued again.
func TestStateWhileRenewing(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Minute), now.Add(time.Hour)
	for _, tc := range []struct {
		notAfter    *time.Time
		state, want string
	}{
		{&future, store.CertRenewing, store.CertRenewing},
		{&future, store.CertIssued, store.CertIssued},
		{&past, store.CertRenewing, store.CertExpired},
		{&past, store.CertIssued, store.CertExpired},
		{nil, store.CertIssued, store.CertIssued},
	} {
		if got := stateWhileRenewing(&store.Certificate{NotAfter: tc.notAfter}, now, tc.state); got != tc.want {
			t.Errorf("notAfter %v, %s: got %s, want %s", tc.notAfter, tc.state, got, tc.want)
		}
	}
}
