package store

import "context"

// Records carry a version that counts their writes, from 1 at creation. The
// API's ETags are made from it, and a write can be made conditional on it
// (If-Match): the condition rides in the write's context so that every
// write of every store checks it inside its own transaction, the one place
// where no other write can come between the check and the change.

// EPRECONDITION: the record is not at the version the write was made for
// (or does not exist, for a write that named a version).
const EPRECONDITION = "precondition_failed"

type ifVersionKey struct{}

// IfVersion returns ctx carrying the condition that the record written with
// it be at one of versions. With no versions, any existing record passes
// (If-Match: *). A version below 1 matches nothing.
func IfVersion(ctx context.Context, versions ...int64) context.Context {
	if versions == nil {
		versions = []int64{}
	}
	return context.WithValue(ctx, ifVersionKey{}, versions)
}

// HasVersionCondition reports whether ctx carries a condition of IfVersion.
func HasVersionCondition(ctx context.Context) bool {
	return ctx.Value(ifVersionKey{}) != nil
}

// CheckVersion answers EPRECONDITION when ctx carries a condition that
// current, the version of the record what (for example "pet 3") as the
// write's transaction read it, does not meet.
func CheckVersion(ctx context.Context, what string, current int64) error {
	v, ok := ctx.Value(ifVersionKey{}).([]int64)
	if !ok || len(v) == 0 {
		return nil
	}
	for _, want := range v {
		if want == current {
			return nil
		}
	}
	return Errorf(EPRECONDITION, "%s has changed since the version in If-Match; read it again, then retry with its new ETag", what)
}
