package acmedns

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mholt/acmez/v3/acme"

	"petstore/store"
)

// SolverStore is the key/value space the servers answer from, and a lock
// keeping two writers of one label apart (a wildcard and its base share a
// label in one order).
type SolverStore interface {
	Store
	Lock(ctx context.Context, name string) error
	Unlock(ctx context.Context, name string) error
}

// Solver solves DNS-01 challenges of names whose _acme-challenge CNAME
// points into the zone, writing the TXT value through the store every
// instance's server answers from. The zone is this service's own, so no
// propagation check is needed.
type Solver struct {
	Store SolverStore
	// Label names the label an identifier's challenge is delegated to.
	Label func(ctx context.Context, identifier string) (string, error)
	// Timeout bounds each write; zero means 10 s.
	Timeout time.Duration
}

// Present makes the challenge's TXT value answered.
func (s *Solver) Present(ctx context.Context, chal acme.Challenge) error {
	return s.change(ctx, chal, func(values []string, v string) []string {
		if slices.Contains(values, v) {
			return values
		}
		return append(values, v)
	})
}

// CleanUp stops answering the challenge's TXT value.
func (s *Solver) CleanUp(ctx context.Context, chal acme.Challenge) error {
	return s.change(ctx, chal, func(values []string, v string) []string {
		return slices.DeleteFunc(values, func(x string) bool { return x == v })
	})
}

func (s *Solver) change(ctx context.Context, chal acme.Challenge, edit func([]string, string) []string) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	label, err := s.Label(ctx, chal.Identifier.Value)
	if err != nil {
		return fmt.Errorf("the DNS challenge of %s: %w", chal.Identifier.Value, err)
	}
	if !validLabel(label) {
		return fmt.Errorf("the DNS challenge of %s: %q is not one DNS label", chal.Identifier.Value, label)
	}
	lock := "acmedns-label/" + label
	if err := s.Store.Lock(ctx, lock); err != nil {
		return fmt.Errorf("the DNS challenge of %s: %w", chal.Identifier.Value, err)
	}
	defer func() { _ = s.Store.Unlock(context.WithoutCancel(ctx), lock) }()
	values, err := readTXT(ctx, s.Store, label)
	if err != nil {
		return err
	}
	values = edit(values, chal.DNS01KeyAuthorization())
	if len(values) == 0 {
		return DeleteTXT(ctx, s.Store, label)
	}
	return SetTXT(ctx, s.Store, label, values)
}

// readTXT reads the values <label>.<zone> answers: nil when the label is
// not stored, which the server answers differently from one without values.
func readTXT(ctx context.Context, kv Store, label string) ([]string, error) {
	b, err := kv.KVGet(ctx, keyPrefix+label)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var values []string
	if err := json.Unmarshal(b, &values); err != nil {
		return nil, fmt.Errorf("the TXT values of %s: %w", label, err)
	}
	return append([]string{}, values...), nil
}
