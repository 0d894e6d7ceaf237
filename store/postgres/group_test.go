package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A round that hangs (a lock held past the statement timeout) does not
// hold the calls behind it: each starts a round of its own once it has
// waited stall. A call whose caller gives up while it waits leaves, and no
// round runs it.
func TestRoundsDoNotWaitForAStuckRound(t *testing.T) {
	release := make(chan struct{})
	ran := make(chan []int, 10)
	g := group[int, int]{max: maxRound, run: func(_ context.Context, round []*groupCall[int, int]) {
		var ins []int
		for _, c := range round {
			ins = append(ins, c.in)
			c.out = c.in * 10
		}
		ran <- ins
		if ins[0] == 1 {
			<-release
		}
	}}
	first := make(chan int)
	go func() { out, _ := g.do(context.Background(), 1); first <- out }()
	if got := <-ran; len(got) != 1 || got[0] != 1 {
		t.Fatalf("first round: %v", got)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.do(cancelled, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call whose caller has gone: %v", err)
	}
	if out, err := g.do(context.Background(), 3); out != 30 || err != nil {
		t.Fatalf("a call behind a stuck round: %d, %v", out, err)
	}
	if got := <-ran; len(got) != 1 || got[0] != 3 {
		t.Errorf("the round of the call behind the stuck one: %v (the gone call must not run)", got)
	}
	close(release)
	if out := <-first; out != 10 {
		t.Errorf("the stuck round's answer: %d", out)
	}
}

// A round that panics (a bug) hands the panic to each of its callers,
// whose goroutines the server recovers, and the next round runs.
func TestAPanickingRoundPanicsInItsCallers(t *testing.T) {
	g := group[int, int]{max: maxRound, run: func(_ context.Context, round []*groupCall[int, int]) {
		if round[0].in == 1 {
			panic("bug")
		}
		for _, c := range round {
			c.out = c.in
		}
	}}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "bug") {
				t.Errorf("the caller of a panicking round recovered %v", r)
			}
		}()
		_, _ = g.do(context.Background(), 1)
		t.Error("a panicking round answered")
	}()
	if out, err := g.do(context.Background(), 2); out != 2 || err != nil {
		t.Errorf("the round after a panic: %d, %v", out, err)
	}
}

// TestDataErrorClasses: a round falls back to one statement per record
// only on a data exception (class 22) or a broken constraint (23); any
// other failure, and an error with no code at all, fails the round.
func TestDataErrorClasses(t *testing.T) {
	for code, want := range map[string]bool{
		"22P05": true, "23503": true, "23505": true,
		"40001": false, "57014": false, "08006": false, "2": false, "": false,
	} {
		err := fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code})
		if got := dataError(err); got != want {
			t.Errorf("dataError(code %q) = %v, want %v", code, got, want)
		}
	}
	if dataError(errors.New("no PostgreSQL error")) {
		t.Error("dataError of a plain error is true")
	}
}
