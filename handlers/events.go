package handlers

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/server/clientkey"
	"petstore/store"
)

// heartbeat is how often an idle stream sends a comment, so that proxies
// and clients see it alive.
const heartbeat = 15 * time.Second

// DefaultMaxStreams caps the event streams open at once on one instance.
const DefaultMaxStreams = 1000

// DefaultMaxStreamsPerClient leaves room for an office's tabs behind one
// address, and a few addresses cannot take all streams.
const DefaultMaxStreamsPerClient = 20

// operatorShare is the part of --max-event-streams kept for the operator's
// GET /admin/events.
const operatorShare = 10 // one tenth

// streamRetry is the reconnection delay a stream asks of its client when
// it ends, so that a shutdown does not bring every client back at once.
const streamRetry = "retry: 5000\n"

// streamWriteTimeout bounds one write to a stream (the server's
// WriteTimeout would end every stream).
const streamWriteTimeout = 30 * time.Second

// streams counts a server's open event streams: in all, the public ones,
// and the public ones per client.
type streams struct {
	open atomic.Int64 // read by /metrics without the lock

	mu       sync.Mutex
	public   int
	byClient map[clientkey.Key]int
}

// Open is how many are open (the /metrics gauge).
func (s *streams) Open() int64 { return s.open.Load() }

// take counts one more stream of client unless a cap is reached, and says
// which; refusals are never counted, so the gauge stays within the cap.
func (s *streams) take(total, perClient int, client clientkey.Key, public bool) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	publicCap := total - total/operatorShare
	switch {
	case s.open.Load() >= int64(total):
		return nil, apiError(codeUnavailable, "the server has its limit of %d event streams open; retry after the seconds in Retry-After, or read the events as JSON pages", total)
	case public && s.public >= publicCap:
		return nil, apiError(codeUnavailable, "the server has its limit of %d public event streams open (the rest is kept for the operator); retry after the seconds in Retry-After, or read GET /events as JSON pages", publicCap)
	case public && s.byClient[client] >= perClient:
		return nil, apiError(codeRateLimited, "this client has its limit of %d event streams open; close one, or retry after the seconds in Retry-After", perClient)
	}
	s.open.Add(1)
	if !public {
		return func() { s.open.Add(-1) }, nil
	}
	s.public++
	if s.byClient == nil {
		s.byClient = map[clientkey.Key]int{}
	}
	s.byClient[client]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.open.Add(-1)
		s.public--
		if s.byClient[client]--; s.byClient[client] <= 0 {
			delete(s.byClient, client)
		}
	}, nil
}

// wantsStream reports whether a request asks for the stream rather than a
// JSON page.
func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// isStream reports whether r opens an event stream, which holds no
// request slot (its own cap counts it).
func isStream(r *http.Request) bool {
	return (r.URL.Path == "/events" || r.URL.Path == "/admin/events") && wantsStream(r)
}

// events serves GET /events or GET /admin/events, as a stream or pages.
func (s *Server) events(kinds []string) echo.HandlerFunc {
	return func(c echo.Context) error {
		after, err := s.eventCursor(c)
		if err != nil {
			return err
		}
		if wantsStream(c.Request()) {
			return s.stream(c, kinds, after)
		}
		limit, err := pageLimit(c)
		if err != nil {
			return err
		}
		es, err := s.store.Events(c.Request().Context(), store.EventFilter{After: after, Kinds: kinds, Limit: limit})
		if err != nil {
			return err
		}
		if len(es) > 0 && len(es) == (store.Page{Limit: limit}).Size() {
			setNextPage(c, "after", es[len(es)-1].ID.String())
		}
		return respondList(c, es, 0)
	}
}

// eventCursor is the id to continue after: Last-Event-ID or ?after=. One
// older than the oldest kept is 410.
func (s *Server) eventCursor(c echo.Context) (store.EventID, error) {
	raw, what := c.Request().Header.Get("Last-Event-ID"), "Last-Event-ID"
	if raw == "" {
		raw, what = c.QueryParam("after"), "query parameter \"after\""
	}
	if raw == "" {
		return store.EventID{}, nil
	}
	after, err := store.ParseEventID(raw)
	if err != nil {
		return after, apiError(store.EINVALID, "%s: %s", what, store.ErrorMessage(err))
	}
	if after, err = s.store.EventCursor(c.Request().Context(), after); err != nil {
		return after, err
	}
	oldest, err := s.store.OldestEvent(c.Request().Context())
	if err != nil {
		return after, err
	}
	if !oldest.IsZero() && after.Less(oldest) && (after.Tx != oldest.Tx || after.Seq+1 != oldest.Seq) {
		return after, store.EventGone(after, oldest)
	}
	return after, nil
}

// stream sends the events after the cursor, then each new one, as
// Server-Sent Events until the client leaves.
func (s *Server) stream(c echo.Context, kinds []string, after store.EventID) error {
	if s.cfg.Events == nil {
		return apiError(codeUnavailable, "this server does not stream events")
	}
	public := c.Request().URL.Path == "/events"
	release, err := s.streams.take(s.cfg.MaxStreams, s.cfg.MaxStreamsPerClient, clientkey.Of(c.Request().RemoteAddr), public)
	if err != nil {
		c.Response().Header().Set("Retry-After", "5")
		return err
	}
	defer release()
	ctx := c.Request().Context()
	sub, err := s.cfg.Events.Hub().Subscribe(ctx)
	if err != nil {
		return err
	}
	defer sub.Close()

	w := c.Response()
	rc := http.NewResponseController(w.Writer)
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 0, 1024)
	send := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send([]byte(streamRetry + ": events follow\n\n")); err != nil {
		return nil
	}
	filter := store.EventFilter{Kinds: kinds}
	// What was missed, from the store; then the feed, skipping repeats.
	for {
		es, err := s.store.Events(ctx, store.EventFilter{After: after, Kinds: kinds, Limit: store.MaxPageSize})
		if err != nil {
			return nil // the answer has begun; the client resumes from its last id
		}
		for i := range es {
			if err := send(appendSSE(buf[:0], &es[i])); err != nil {
				return nil
			}
			after = es[i].ID
		}
		if len(es) < store.MaxPageSize {
			break
		}
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.streamsEnd.Done():
			return nil
		case <-beat.C:
			if err := send([]byte(": heartbeat\n\n")); err != nil {
				return nil
			}
		case e, ok := <-sub.C:
			if !ok {
				return nil // fell behind, or shutting down: the client resumes
			}
			if !after.Less(e.ID) || !filter.Matches(e.Type) {
				continue
			}
			if err := send(appendSSE(buf[:0], &e)); err != nil {
				return nil
			}
			after = e.ID
		}
	}
}

// appendSSE appends one event in the text/event-stream form.
func appendSSE(b []byte, e *store.Event) []byte {
	b = append(b, "id: "...)
	b = append(b, e.ID.String()...)
	b = append(b, "\nevent: "...)
	b = append(b, e.Type...)
	b = append(b, "\ndata: "...)
	b = e.AppendJSON(b) // JSON has no raw newline
	return append(b, "\n\n"...)
}
