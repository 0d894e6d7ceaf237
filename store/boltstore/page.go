package boltstore

import (
	"bytes"
	"math"
	"slices"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// walkPage visits the entries of a page in key order: the keys of b that are
// prefix followed by an 8-byte id greater than p.After, at most p.Size() of
// them. It returns the After of the next page, or 0 on the last. It seeks
// straight to the page, so a deep page costs what the first does.
func walkPage(b *bolt.Bucket, prefix []byte, p store.Page, visit func(id int64, v []byte) error) (int64, error) {
	if p.After == math.MaxInt64 {
		return 0, nil
	}
	after := max(p.After, 0)
	limit := p.Size()
	c := b.Cursor()
	n := 0
	var last int64
	// prefix is clipped so that appending the id copies it.
	for k, v := c.Seek(appendID(slices.Clip(prefix), after+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+8 {
			continue // a longer key of another prefix family; cannot happen with validated statuses
		}
		if n == limit {
			return last, nil
		}
		last = btoi(k[len(prefix):])
		if err := visit(last, v); err != nil {
			return 0, err
		}
		n++
	}
	return 0, nil
}

func countPrefix(b *bolt.Bucket, prefix []byte) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}
