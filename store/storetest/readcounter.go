package storetest

import (
	"context"
	"sync/atomic"

	"petstore/store"
)

// ReadCounter is a real store that counts the key/value reads made through
// it: certmagic's storage, where certificates and challenge tokens are
// looked up.
type ReadCounter struct {
	store.Store
	reads atomic.Int64
}

func (s *ReadCounter) Reads() int64 { return s.reads.Load() }

func (s *ReadCounter) KVGet(ctx context.Context, key string) ([]byte, error) {
	s.reads.Add(1)
	return s.Store.KVGet(ctx, key)
}

func (s *ReadCounter) KVStat(ctx context.Context, key string) (store.KVInfo, error) {
	s.reads.Add(1)
	return s.Store.KVStat(ctx, key)
}

func (s *ReadCounter) KVKeys(ctx context.Context, prefix string) ([]string, error) {
	s.reads.Add(1)
	return s.Store.KVKeys(ctx, prefix)
}
