package store

import "slices"

// Records carry a version that counts their writes, from 1, for ETags. A
// write's condition on it (If-Match, If-None-Match) is an argument of the
// write, checked inside its transaction, where no other write can come
// between the check and the change.

// EPRECONDITION: the record is not at the version the write was made for
// (or does not exist, for a write that named a version).
const EPRECONDITION = "precondition_failed"

// Condition is what a write of one record requires of the record as the
// write's transaction finds it. The zero value requires nothing.
type Condition struct {
	// IfMatch is nil for no condition; empty for any existing record
	// (If-Match: *); else the record must be at one of these versions. A
	// version below 1 matches nothing.
	IfMatch []int64
	// IfNoneMatch: the record must be at none of these versions.
	IfNoneMatch []int64
	// IfNoneMatchAny: the record must not exist (If-None-Match: *); a
	// write that only changes existing records then always fails it.
	IfNoneMatchAny bool
}

// IsZero reports whether c requires nothing, so that a store can take
// its shortest path.
func (c Condition) IsZero() bool {
	return c.IfMatch == nil && len(c.IfNoneMatch) == 0 && !c.IfNoneMatchAny
}

// NeedsRecord reports whether a write on a record that does not exist
// fails c rather than being "not found": If-Match, * included, names a
// current record (RFC 9110 section 13.1.1).
func (c Condition) NeedsRecord() bool { return c.IfMatch != nil }

// Check answers EPRECONDITION when current, the version of the record what
// (for example "pet 3") as the write's transaction read it, fails c.
func (c Condition) Check(what string, current int64) error {
	switch {
	case c.IfNoneMatchAny:
		return Errorf(EPRECONDITION, "%s exists, and If-None-Match: * allows the write only when it does not", what)
	case slices.Contains(c.IfNoneMatch, current):
		return Errorf(EPRECONDITION, "%s is at the version in If-None-Match, which allows the write only at another", what)
	case len(c.IfMatch) > 0 && !slices.Contains(c.IfMatch, current):
		return Errorf(EPRECONDITION, "%s has changed since the version in If-Match; read it again, then retry with its new ETag", what)
	}
	return nil
}

// Version is the inventory entry's version, made from its quantity and
// status rather than counted: nothing more is stored, and it changes
// exactly when the entry's answer does.
func (it InventoryItem) Version() int64 {
	var status int64
	switch it.Status {
	case StatusPending:
		status = 1
	case StatusSold:
		status = 2
	}
	return int64(it.Quantity)*3 + status + 1
}
