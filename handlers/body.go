package handlers

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// readBody reads an operation's body whole, within limit, before anything
// judges it: kin-openapi's security check would report a failed read as a
// failed credential. So: too large 413, cut short 400, too slow 408, and
// only a wrong credential 401. Validator and handler then read the same
// bytes from memory.
func readBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Body == nil || r.Body == http.NoBody {
				return next(c)
			}
			if r.ContentLength > limit {
				return bodyTooLarge(c, limit)
			}
			data, err := readAtMost(r, limit, http.NewResponseController(c.Response().Writer))
			if err != nil {
				// Broken framing or a stalled client: what follows on the connection
				// cannot be trusted to be a request.
				c.Response().Header().Set(echo.HeaderConnection, "close")
				return bodyReadError(err)
			}
			if int64(len(data)) > limit {
				return bodyTooLarge(c, limit)
			}
			body := &readBodyBytes{data: data}
			body.Reset(data)
			r.Body = body
			// One body, rewound, serves all its readers in turn.
			r.GetBody = func() (io.ReadCloser, error) { body.Reset(data); return body, nil }
			r.ContentLength = int64(len(data))
			return next(c)
		}
	}
}

// A body must arrive at bodyMinRate bytes a second or faster after
// bodyGrace: a client sending a byte a second would hold a connection and
// a goroutine for the whole read timeout. The slowest honest client is far
// faster.
const (
	bodyGrace   = 5 * time.Second
	bodyMinRate = 1024
)

// readAtMost reads the body, or limit+1 bytes when longer, in one
// allocation when the length is declared. It moves the read deadline along
// with what arrived and clears it after, when rc can; its deadlines stay
// within ReadTimeout from the body's start.
func readAtMost(r *http.Request, limit int64, rc *http.ResponseController) ([]byte, error) {
	body := &minRateReader{r: r.Body, rc: rc, start: time.Now()}
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		body.last = body.start.Add(srv.ReadTimeout)
	}
	defer body.clear()
	if r.ContentLength >= 0 {
		data := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(body, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	return io.ReadAll(io.LimitReader(body, limit+1))
}

// minRateReader gives each read the deadline what arrived earned:
// bodyGrace plus a second per bodyMinRate bytes (none where rc cannot).
type minRateReader struct {
	r     io.Reader
	rc    *http.ResponseController
	start time.Time
	last  time.Time // no deadline after this; zero: none
	n     int64
	// set: clear must take a deadline away; unsupported: rc refused one.
	set, unsupported bool
}

func (m *minRateReader) Read(p []byte) (int, error) {
	if !m.unsupported {
		deadline := m.start.Add(bodyGrace + time.Duration(m.n)*time.Second/bodyMinRate)
		if !m.last.IsZero() && deadline.After(m.last) {
			deadline = m.last
		}
		if m.rc.SetReadDeadline(deadline) == nil {
			m.set = true
		} else {
			m.unsupported = true
		}
	}
	n, err := m.r.Read(p)
	m.n += int64(n)
	return n, err
}

// clear takes the deadline away once the body is read: left on, it would
// fail net/http's background read and cancel the request.
func (m *minRateReader) clear() {
	if m.set {
		_ = m.rc.SetReadDeadline(time.Time{})
	}
}

func bodyTooLarge(c echo.Context, limit int64) error {
	// The rest is unread: the connection cannot carry another request.
	c.Response().Header().Set(echo.HeaderConnection, "close")
	return apiError(codePayloadTooLarge, "request body is larger than the limit of %d KiB", limit>>10)
}

// bodyReadError says why a body could not be read: too slow (the read
// deadline), or ended before its length or with broken chunking.
func bodyReadError(err error) error {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return apiError(codeRequestTimeout, "the request body arrived too slowly: the server needs %d bytes a second after the first %s, within its read timeout", bodyMinRate, bodyGrace)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return apiError(store.EINVALID, "body: the connection ended before the whole body arrived")
	}
	return apiError(store.EINVALID, "body: could not be read (malformed chunked encoding)")
}

// readBodyBytes is a body readBody has read: the validator rereads it via
// GetBody, decodeBody takes its bytes.
type readBodyBytes struct {
	bytes.Reader
	data []byte
}

func (*readBodyBytes) Close() error { return nil }
