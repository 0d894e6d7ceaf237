package postgres

import (
	"encoding/binary"
	"testing"
	"time"
)

// The unknown keys remembered are maxMiss at most: one more forgets the
// least recently tried, and a key tried again before each of the others
// is still remembered, so its next try costs no query.
func TestCredentialMissesForgetTheLeastRecentlyTried(t *testing.T) {
	var k keyLookups
	now := time.Now()
	hash := func(i int) (h [32]byte) {
		binary.BigEndian.PutUint64(h[:], uint64(i))
		return h
	}
	k.miss(hash(0), now)
	for i := 1; i <= maxMiss; i++ {
		if !k.missed(hash(0), now) {
			t.Fatalf("the key tried before every other was forgotten after %d others", i-1)
		}
		k.miss(hash(i), now)
	}
	if !k.missed(hash(0), now) {
		t.Error("the key tried before every other was forgotten")
	}
	if k.missed(hash(1), now) {
		t.Error("the least recently tried unknown key is still remembered")
	}
	if !k.missed(hash(maxMiss), now) {
		t.Error("the last unknown key is not remembered")
	}
	if k.missed(hash(0), now.Add(missTTL)) {
		t.Error("an unknown key is remembered past missTTL")
	}
	if n := k.misses.Len(); n != maxMiss {
		t.Errorf("%d unknown keys remembered, want %d", n, maxMiss)
	}
	k.forget()
	if k.missed(hash(0), now) {
		t.Error("an unknown key is remembered after forget")
	}
}
