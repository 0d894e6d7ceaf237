package server

import (
	"errors"
	"net"
	"sync"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// proxyHeaderTimeout is how long a trusted source's connection has to send
// its PROXY header.
const proxyHeaderTimeout = 5 * time.Second

// proxyProtocolListener reads trusted sources' PROXY headers, so that
// RemoteAddr is the client named; others pass untouched. The header is
// read lazily and the ConnGuard asks RemoteAddr in Accept, so each is read
// on its own goroutine: a silent trusted connection must not stop Accept.
type proxyProtocolListener struct {
	inner *proxyproto.Listener
	ready chan acceptResult
	done  chan struct{}
	once  sync.Once
}

type acceptResult struct {
	conn net.Conn
	err  error
}

// newProxyProtocolListener wraps ln, reading headers as policy says.
func newProxyProtocolListener(ln net.Listener, policy proxyproto.ConnPolicyFunc) net.Listener {
	l := &proxyProtocolListener{
		inner: &proxyproto.Listener{Listener: ln, ConnPolicy: policy, ReadHeaderTimeout: proxyHeaderTimeout},
		ready: make(chan acceptResult),
		done:  make(chan struct{}),
	}
	go l.acceptLoop()
	return l
}

func (l *proxyProtocolListener) acceptLoop() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			// Hand the error to Accept (the guard may make room on EMFILE); a
			// closed listener ends the loop.
			if !l.deliver(acceptResult{err: err}) || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		pc, ok := c.(*proxyproto.Conn)
		if !ok { // an untrusted source: served as it is
			if !l.deliver(acceptResult{conn: c}) {
				_ = c.Close()
			}
			continue
		}
		go func() {
			// With REQUIRE, a missing, malformed or late header leaves ProxyHeader
			// nil; the first Read would fail anyway, so the connection is closed.
			if pc.ProxyHeader() == nil || !l.deliver(acceptResult{conn: pc}) {
				_ = pc.Close()
			}
		}()
	}
}

// deliver waits for Accept to take r; false when the listener closed first.
func (l *proxyProtocolListener) deliver(r acceptResult) bool {
	select {
	case l.ready <- r:
		return true
	case <-l.done:
		return false
	}
}

func (l *proxyProtocolListener) Accept() (net.Conn, error) {
	select {
	case r := <-l.ready:
		return r.conn, r.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *proxyProtocolListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.inner.Close()
}

func (l *proxyProtocolListener) Addr() net.Addr { return l.inner.Addr() }
