package accesslog

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestAccessLineMatchesSlog writes access lines with awkward values and
// plain ones, and compares them byte for byte with what slog's own
// handlers write for the same record: the fast path must not change the
// log's format.
func TestAccessLineMatchesSlog(t *testing.T) {
	values := []string{
		"", "plain", "/pets/:petId", "127.0.0.1", "::1", "a b", "a=b", `say "hi"`, `q"uote`, `back\slash`,
		"tab\there", "new\nline", "cr\r", "\x00nul", "\x1fus", "del\x7f", "<html>&amp;", "é ü ß", "日本",
		"\u2028ls\u2029ps", "bad\xffutf8", "\xc3", "nbsp\u00a0", "zero\u200bwidth", "emoji 🐕", "\u0085nel",
	}
	times := []time.Time{
		time.Date(2026, 11, 21, 18, 28, 12, 0, time.UTC),
		time.Date(2026, 11, 21, 18, 28, 12, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.FixedZone("x", 5*3600+30*60)),
		time.Date(2026, 1, 2, 3, 4, 5, 100000, time.FixedZone("y", -7*3600)),
		// Local times: the same millisecond twice, then the next one.
		time.Date(2026, 3, 29, 1, 30, 0, 123000000, time.Local),
		time.Date(2026, 3, 29, 1, 30, 0, 123999999, time.Local),
		time.Date(2026, 3, 29, 1, 30, 0, 124000000, time.Local),
		// The same second in another zone, then in the same zone a
		// nanosecond in and a millisecond in (the text of a second is
		// kept from one line to the next).
		time.Date(2026, 3, 29, 1, 30, 0, 124000000, time.Local).In(time.FixedZone("z", 3600)),
		time.Date(2026, 3, 29, 0, 30, 0, 1, time.UTC).In(time.FixedZone("z", 3600)),
		time.Date(2026, 3, 29, 0, 30, 0, 120000000, time.UTC).In(time.FixedZone("z", 3600)),
		// A clock reading, with its monotonic part.
		time.Now(),
	}
	durations := []time.Duration{0, 1, 999, 1500 * time.Microsecond, 2*time.Second + 3, -5 * time.Millisecond}
	var lines []Line
	var at []time.Time
	for i, v := range values {
		l := Line{
			Level:     slog.LevelInfo,
			RequestID: v, Method: values[(i+1)%len(values)], Route: values[(i+2)%len(values)], Remote: values[(i+3)%len(values)],
			Status: 200 + i, Bytes: int64(i * 1000), Duration: durations[i%len(durations)],
		}
		if i%3 == 0 {
			l.Level = slog.LevelError
		}
		lines, at = append(lines, l), append(at, times[i%len(times)])
	}
	// Lines whose values are all plain take the fast path: each of them at
	// every time, with every duration.
	plainLines := []Line{
		{RequestID: "0123456789abcdef01234567", Method: "GET", Route: "/pets/:petId", Remote: "127.0.0.1", Status: 200, Bytes: 61},
		{RequestID: "client-id_1.2", Method: "OPTIONS", Route: "", Remote: "2001:db8::1", Status: 404},
	}
	for i, t := range times {
		for j, l := range plainLines {
			l.Duration = durations[(i+j)%len(durations)]
			lines, at = append(lines, l), append(at, t)
		}
	}
	// Each value alone among plain ones: the fast path must leave every
	// value that needs quoting or escaping to slog.
	for i, v := range values {
		l := plainLines[0]
		l.Route = v
		lines, at = append(lines, l), append(at, times[i%len(times)])
	}
	for _, json := range []bool{false, true} {
		var got bytes.Buffer
		w := New(&got, json)
		for i, l := range lines {
			got.Reset()
			w.Log(at[i], l)

			var want bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&want, nil)
			if json {
				h = slog.NewJSONHandler(&want, nil)
			}
			rec := slog.NewRecord(at[i], l.Level, "request", 0)
			rec.AddAttrs(l.Attrs()...)
			if err := h.Handle(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("json=%v, line %d:\n got %s\nwant %s", json, i, got.String(), want.String())
			}
		}
	}
}
