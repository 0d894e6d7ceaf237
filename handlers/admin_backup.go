package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// backupIdleTimeout is how long a backup download may make no progress.
// It replaces the server's WriteTimeout, which would cut any longer
// download, renewed on every write: a slow client is fine, a stalled one
// is not.
const backupIdleTimeout = 60 * time.Second

// backup streams a consistent copy of the data file in one read
// transaction, its size as Content-Length; HEAD gets the headers alone.
func (s *Server) backup(c echo.Context) error {
	b := s.cfg.File
	if b == nil {
		return errNoBackup
	}
	ctx := c.Request().Context()
	res := c.Response()
	setHeaders := func(size int64) {
		h := res.Header()
		h.Set(echo.HeaderContentType, echo.MIMEOctetStream)
		h.Set(echo.HeaderContentLength, strconv.FormatInt(size, 10))
		h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="petstore-%s.db"`, s.now().UTC().Format("20060102T150405Z")))
		h.Set("Cache-Control", "no-store")
	}
	if c.Request().Method == http.MethodHead {
		// The size a GET would send, without copying anything.
		size := int64(-1)
		_, err := b.BackupSized(ctx, func(n int64) (io.Writer, error) {
			size = n
			return nil, errHeadersOnly
		})
		if size < 0 {
			return err
		}
		setHeaders(size)
		return c.NoContent(http.StatusOK)
	}

	s.backups.Add(1)
	defer s.backups.Add(-1)
	// An abort unblocks a write stuck on a client that does not read, so
	// that the read transaction ends.
	rc := http.NewResponseController(res)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopAbort := context.AfterFunc(s.aborted, func() {
		cancel()
		_ = rc.SetWriteDeadline(time.Now())
	})
	defer stopAbort()
	committed := false
	n, err := b.BackupSized(ctx, func(size int64) (io.Writer, error) {
		setHeaders(size)
		res.WriteHeader(http.StatusOK)
		committed = true
		return &deadlineWriter{w: res, rc: rc}, nil
	})
	if err == nil {
		return nil // the access log has the bytes and the duration
	}
	if !committed {
		return err // nothing sent yet: an ordinary Error answer
	}
	// The body stops short of its Content-Length, so net/http closes the
	// connection and the client sees a truncated download, not a whole file.
	s.log.Warn("backup interrupted", "request_id", requestID(c), "bytes", n, "err", err)
	return nil
}

// errHeadersOnly ends a HEAD's backup once its size is known.
var errHeadersOnly = errors.New("headers only")

// AbortBackups stops the backup downloads in flight, for a shutdown that
// cannot wait: each ends as an interrupted download.
func (s *Server) AbortBackups() { s.abortBackups() }

// FinishBackups is for an upgrade's old process on a data file, whose new
// process opens the file only once the downloads' read transactions end:
// it waits for them, still serving everything, until ctx ends or timeout
// passes, and then aborts those left, so that the shutdown that follows
// does not hold every new connection in the backlog for them.
func (s *Server) FinishBackups(ctx context.Context, timeout time.Duration) {
	n := s.backups.Load()
	if n == 0 {
		return
	}
	s.log.Info("upgrade: this process goes on serving until its backup downloads end (within --shutdown-timeout), then stops", "backups", n)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for s.backups.Load() > 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if n := s.backups.Load(); n > 0 {
		s.log.Warn("upgrade: backup downloads still running; aborting them", "backups", n, "timeout", timeout)
		s.abortBackups()
	}
}

// deadlineWriter pushes the connection's write deadline backupIdleTimeout
// ahead before every write.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
	// unsupported: the connection has no deadlines (a test recorder).
	unsupported bool
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if !d.unsupported {
		if err := d.rc.SetWriteDeadline(time.Now().Add(backupIdleTimeout)); errors.Is(err, http.ErrNotSupported) {
			d.unsupported = true
		}
	}
	return d.w.Write(p)
}
