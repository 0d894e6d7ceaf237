package certs

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/caddyserver/certmagic"

	"petstore/store"
)

// Storage is certmagic's storage on the store's key/value space.
// "Directories" are implicit, as in certmagic's model: a key followed by a
// slash starts other keys.
func Storage(kv store.KeyValue) certmagic.Storage { return certStorage{KeyValue: kv} }

// certStorage's Lock, TryLock and Unlock are the store's named locks.
type certStorage struct {
	store.KeyValue
	// presented, when set, sees every challenge this service's solvers store
	// before presenting it.
	presented func(key string, value []byte)
}

var (
	_ certmagic.Storage   = certStorage{}
	_ certmagic.TryLocker = certStorage{}
)

func (s certStorage) String() string { return fmt.Sprintf("petstore:%T", s.KeyValue) }

// notExist wraps fs.ErrNotExist, which certmagic checks for a missing key.
func notExist(key string) error {
	return fmt.Errorf("certmagic storage: key %q: %w", key, fs.ErrNotExist)
}

// cleanKey makes "a/b", "/a/b" and "a/b/" one key.
func cleanKey(key string) string { return strings.Trim(key, "/") }

// missing turns the store's not-found into certmagic's.
func missing(key string, err error) error {
	if store.ErrorCode(err) == store.ENOTFOUND {
		return notExist(key)
	}
	return err
}

func (s certStorage) Store(ctx context.Context, key string, value []byte) error {
	key = cleanKey(key)
	if key == "" {
		return fmt.Errorf("certmagic storage: empty key")
	}
	if err := s.KVPut(ctx, key, value); err != nil {
		return err
	}
	if s.presented != nil {
		s.presented(key, value)
	}
	return nil
}

func (s certStorage) Load(ctx context.Context, key string) ([]byte, error) {
	key = cleanKey(key)
	v, err := s.KVGet(ctx, key)
	return v, missing(key, err)
}

// Delete deletes a key, or a directory with everything under it.
func (s certStorage) Delete(ctx context.Context, key string) error {
	return s.KVDelete(ctx, cleanKey(key))
}

func (s certStorage) Exists(ctx context.Context, key string) bool {
	_, err := s.Stat(ctx, key)
	return err == nil
}

func (s certStorage) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	key = cleanKey(key)
	info, err := s.KVStat(ctx, key)
	if err == nil {
		return certmagic.KeyInfo{Key: key, Modified: info.Modified, Size: info.Size, IsTerminal: true}, nil
	}
	if store.ErrorCode(err) != store.ENOTFOUND {
		return certmagic.KeyInfo{}, err
	}
	keys, err := s.KVKeys(ctx, key)
	if err != nil {
		return certmagic.KeyInfo{}, err
	}
	if len(keys) == 0 {
		return certmagic.KeyInfo{}, notExist(key)
	}
	return certmagic.KeyInfo{Key: key, IsTerminal: false}, nil
}

// List returns the keys and directories directly under prefix, or every
// one below it with recursive.
func (s certStorage) List(ctx context.Context, prefix string, recursive bool) ([]string, error) {
	prefix = cleanKey(prefix)
	keys, err := s.KVKeys(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 && prefix != "" {
		if _, err := s.KVStat(ctx, prefix); err != nil {
			return nil, missing(prefix, err)
		}
	}
	seen := map[string]bool{}
	dir := ""
	if prefix != "" {
		dir = prefix + "/"
	}
	for _, k := range keys {
		parts := strings.Split(strings.TrimPrefix(k, dir), "/")
		if !recursive {
			parts = parts[:1]
		}
		for i := range parts {
			seen[path.Join(prefix, path.Join(parts[:i+1]...))] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}
