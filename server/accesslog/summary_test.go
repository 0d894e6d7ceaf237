package accesslog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer that the summary's timer and the test
// may use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSummaryFirstOfWindow: Add says which refusal opens a window, the one a
// caller logs in full, and each window's line counts all of its refusals:
// the windows opened are the lines written, whatever the timer's pace.
func TestSummaryFirstOfWindow(t *testing.T) {
	var out lockedBuffer
	s := NewSummary(slog.New(slog.NewJSONHandler(&out, nil)), "requests failed with database_unavailable", 20*time.Millisecond)
	const rounds, adds = 4, 50
	opened := 0
	for round := 1; round <= rounds; round++ {
		for i := range adds {
			if s.Add([]string{"192.0.2.1", "192.0.2.2"}[i%2]) {
				opened++
			}
		}
		// The round's last window has closed when its lines count every add.
		deadline := time.Now().Add(10 * time.Second)
		for {
			lines, counted := summaryLines(out.String())
			if counted == round*adds {
				if lines != opened {
					t.Fatalf("%d windows opened, %d summary lines:\n%s", opened, lines, out.String())
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the summary lines count %d of %d adds:\n%s", counted, round*adds, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if opened < rounds {
		t.Fatalf("%d rounds after the windows closed opened %d windows", rounds, opened)
	}
}

// summaryLines are the summary lines in out (JSON) and their counts' sum.
func summaryLines(out string) (lines, counted int) {
	for _, l := range bytes.Split([]byte(out), []byte("\n")) {
		var rec struct{ Count int }
		if json.Unmarshal(l, &rec) == nil {
			lines, counted = lines+1, counted+rec.Count
		}
	}
	return lines, counted
}
