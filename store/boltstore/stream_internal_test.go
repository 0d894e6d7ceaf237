package boltstore

import (
	"slices"
	"testing"
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
