package boltstore

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// bktVersions holds the version of each record written since its
// creation, by kind and id; a record without an entry is at version 1, so
// creating one writes nothing here. Its sequence is a floor that a backup
// put back sets (continueAfter) from the raised event counter (every
// version counts a write that recorded an event): a write moves past it.
var bktVersions = []byte("versions")

// Kinds of versioned records, the first byte of their key.
const (
	versionPet      = 'p'
	versionCategory = 'c'
	versionOrder    = 'o'
)

func versionKey(kind byte, id int64) []byte {
	return appendID(append(make([]byte, 0, 9), kind), id)
}

func getVersion(tx *bolt.Tx, kind byte, id int64) int64 {
	if v := tx.Bucket(bktVersions).Get(versionKey(kind, id)); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 1
}
