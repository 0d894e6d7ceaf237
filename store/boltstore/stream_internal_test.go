package boltstore

import (
	"context"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestStreamCoversEveryBucket: every bucket of the file is either given by
// Stream or rebuilt from what it gives, so that a bucket added later cannot
// be left behind by petstore migrate without a word.
func TestStreamCoversEveryBucket(t *testing.T) {
	for _, b := range allBuckets {
		in := func(list [][]byte) bool {
			return slices.ContainsFunc(list, func(x []byte) bool { return string(x) == string(b) })
		}
		if !in(streamedBuckets) && !in(derivedBuckets) {
			t.Errorf("bucket %q is neither streamed nor derived: a move would leave it behind", b)
		}
	}
}

// A file that a newer version wrote (or a backup of one, put back under
// this one) may hold a bucket this version does not know: a move would
// leave it behind without a word. It is refused, named, and nothing is
// copied.
func TestStreamRefusesABucketItDoesNotKnow(t *testing.T) {
	from, to := openTestDB(t), openTestDB(t)
	err := from.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("subscriptions"))
		if err != nil {
			return err
		}
		return b.Put([]byte("1"), []byte(`{"plan":"pro"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = to.Import(context.Background(), from)
	if err == nil || !strings.Contains(err.Error(), `"subscriptions"`) || !strings.Contains(err.Error(), "nothing was copied") {
		t.Fatalf("a move of a file with a bucket this version does not know: %v; want a refusal naming it", err)
	}
}
