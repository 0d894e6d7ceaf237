package store

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// The domain and certificate events come from the change of the record:
// a new state of the domain, a lifecycle event newly recorded, expiry.
func TestDomainEvents(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pending := Domain{Name: "a.test", State: DomainPending}
	verified := Domain{Name: "a.test", State: DomainVerified}
	withEvent := func(d Domain, kind string, at time.Time) Domain {
		d.Certificate.Events = append(slices.Clone(d.Certificate.Events), CertEvent{Kind: kind, At: at})
		return d
	}
	issued := withEvent(verified, CertEventObtained, t0)
	issued.Certificate.State = CertIssued
	failedRenewal := withEvent(issued, CertEventFailed, t0.Add(time.Hour))
	renewed := withEvent(failedRenewal, CertEventRenewed, t0.Add(2*time.Hour))
	expiring := withEvent(failedRenewal, CertEventExpiring, t0.Add(3*time.Hour))
	expired := failedRenewal
	expired.Certificate.State = CertExpired
	moved := issued
	moved.State = DomainMoved
	owned := Domain{Name: "a.test", State: DomainOwned}
	ownedIssued := withEvent(owned, CertEventObtained, t0)
	ownedIssued.Certificate.State = CertIssued
	switched := ownedIssued
	switched.State = DomainVerified
	for _, c := range []struct {
		name string
		old  *Domain
		new  Domain
		want []string
	}{
		{"added", nil, pending, []string{EventDomainAdded}},
		{"a check that found the same", &pending, pending, nil},
		{"verified", &pending, verified, []string{EventDomainVerified}},
		{"issued", &verified, issued, []string{EventCertIssued}},
		{"a failed renewal keeps the state", &issued, failedRenewal, []string{EventCertFailed}},
		{"the same record again", &failedRenewal, failedRenewal, nil},
		{"renewed", &failedRenewal, renewed, []string{EventCertRenewed}},
		{"expiring", &failedRenewal, expiring, []string{EventCertExpiring}},
		{"expiring, recorded before", &expiring, expiring, nil},
		{"expired", &failedRenewal, expired, []string{EventCertExpired}},
		{"moved", &issued, moved, []string{EventDomainMoved}},
		{"owned", &pending, owned, []string{EventDomainOwned}},
		{"issued ahead of the traffic", &owned, ownedIssued, []string{EventCertIssued}},
		{"switched, with its certificate", &ownedIssued, switched, []string{EventDomainVerified}},
		{"ownership lost", &owned, pending, nil},
	} {
		if got := DomainEvents(c.old, &c.new); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestEventIDs(t *testing.T) {
	ids := []EventID{{0, 1}, {0, 2}, {1, 0}, {1, 5}, {2, 1}}
	for i := 1; i < len(ids); i++ {
		if !ids[i-1].Less(ids[i]) || ids[i-1].String() >= ids[i].String() {
			t.Errorf("%s does not sort before %s", ids[i-1], ids[i])
		}
		back, err := ParseEventID(ids[i].String())
		if err != nil || back != ids[i] {
			t.Errorf("ParseEventID(%s) = %v, %v", ids[i], back, err)
		}
	}
	// The text form is the one it always had, which cursors in clients'
	// hands carry.
	for _, id := range []EventID{{}, {0, 1}, {0xabc, 0xdef}, {1<<64 - 1, 1<<63 + 5}} {
		if got, want := id.String(), fmt.Sprintf("evt_%016x%016x", id.Tx, id.Seq); got != want {
			t.Errorf("%#v: %s, want %s", id, got, want)
		}
	}
	for _, bad := range []string{"", "evt_", "evt_123", "evt_zz000000000000000000000000000000", "xyz_00000000000000000000000000000001"} {
		if _, err := ParseEventID(bad); ErrorCode(err) != EINVALID {
			t.Errorf("ParseEventID(%q): %v", bad, err)
		}
	}
}
