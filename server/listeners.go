// Package server owns the service's listening sockets: binding, the
// connection guard, the PROXY protocol, the open-files limit, their
// http.Servers, and shutdown.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// Listeners are the service's listening sockets, each with its server,
// all behind one ConnGuard.
type Listeners struct {
	conns *ConnGuard
	list  []listener
	// proxyProtocol decides which connections begin with a PROXY header;
	// nil: none does.
	proxyProtocol proxyproto.ConnPolicyFunc
	// inherited are systemd's sockets by name, not yet taken by Bind.
	inherited map[string]net.Listener
	// bound are the sockets Bind opened, by name, not yet taken by ListenAs.
	bound map[string]net.Listener
	// upgrader passes the sockets to the process of an upgrade; nil: none.
	upgrader *Upgrader
	// draining: shutdown began, and every HTTP/1 answer closes its
	// connection.
	draining atomic.Bool
}

type listener struct {
	ln  net.Listener
	srv *http.Server
}

// NewListeners returns an empty set whose connections conns admits.
func NewListeners(conns *ConnGuard) *Listeners {
	return &Listeners{conns: conns, bound: map[string]net.Listener{}}
}

// HandOver makes sockets bound from now on come from the process that
// started this one, and go to the next upgrade's through u.
func (l *Listeners) HandOver(u *Upgrader) { l.upgrader = u }

// ReadProxyProtocolFrom makes listeners opened after it require a PROXY
// header (v1 or v2) on connections from sources (IPs or CIDR ranges) and
// take its client address as the connection's. It fails on a source that
// is neither.
func (l *Listeners) ReadProxyProtocolFrom(sources []string) error {
	policy, err := proxyproto.PolicyFromRanges(sources, proxyproto.REQUIRE, proxyproto.SKIP)
	if err != nil {
		return fmt.Errorf("--proxy-protocol-from: %w", err)
	}
	l.proxyProtocol = policy
	return nil
}

// Bind opens the socket of name without serving it: the one an upgrade's
// old process passed, else systemd's, else a new one on addr.
func (l *Listeners) Bind(name, addr string) (net.Addr, error) {
	if ln := l.bound[name]; ln != nil {
		return ln.Addr(), nil
	}
	ln, err := l.upgrader.listener(name, func() (net.Listener, error) {
		if ln := l.inherited[name]; ln != nil {
			delete(l.inherited, name)
			return ln, nil
		}
		return net.Listen("tcp", addr)
	})
	if err != nil {
		return nil, err
	}
	// A socket systemd passed that the old process's replaced goes unused.
	if ln := l.inherited[name]; ln != nil {
		delete(l.inherited, name)
		ln.Close()
	}
	l.bound[name] = ln
	return ln.Addr(), nil
}

// ListenAs serves srv (TLS when it has a TLSConfig) on the socket of name
// that Bind opened, or opens it as Bind does (empty name: a new socket on
// addr), and returns its address. It sets srv's ConnState for the guard.
func (l *Listeners) ListenAs(name, addr string, srv *http.Server) (net.Addr, error) {
	var ln net.Listener
	var err error
	if name == "" {
		ln, err = net.Listen("tcp", addr)
	} else if _, err = l.Bind(name, addr); err == nil {
		ln = l.bound[name]
		delete(l.bound, name)
	}
	if err != nil {
		return nil, err
	}
	if l.proxyProtocol != nil {
		// Innermost, so that everything above sees the header's client.
		ln = newProxyProtocolListener(ln, l.proxyProtocol)
	}
	ln = l.conns.Listener(ln)
	srv.ConnState = l.conns.connState
	h := srv.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && l.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
	if srv.TLSConfig != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	l.list = append(l.list, listener{ln, srv})
	return ln.Addr(), nil
}

// Serve serves every listener until ctx ends (nil; the caller shuts the
// servers down) or one fails (its error).
func (l *Listeners) Serve(ctx context.Context) error {
	serveErr := make(chan error, len(l.list))
	for _, one := range l.list {
		go func() { serveErr <- one.srv.Serve(one.ln) }()
	}
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
		return nil
	}
}

// Shutdown stops the servers together: they stop accepting, and requests
// in flight get until timeout. Past it, abort is called (stopping backups,
// whose read transactions would keep the data file open) and every
// connection left is closed, whatever clients do.
func (l *Listeners) Shutdown(timeout time.Duration, abort func(), log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Stop accepting first (new connections wait in the backlog for a
	// process sharing it) and answer what accepted connections sent, each
	// answer closing its connection; only then let net/http shut down, which
	// drops requests it reads from then on (see ConnGuard.unanswered).
	l.draining.Store(true)
	for _, one := range l.list {
		_ = one.ln.Close()
	}
	for l.conns.unanswered(firstRequestPatience) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	var wg sync.WaitGroup
	var unfinished atomic.Bool
	for _, one := range l.list {
		wg.Go(func() {
			// A listener Serve still holds fails its second Close; only the
			// deadline means requests were left unfinished.
			if err := one.srv.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
				unfinished.Store(true)
			}
		})
	}
	wg.Wait()
	if !unfinished.Load() {
		return
	}
	log.Warn("shutdown timeout passed: aborting backups in flight and closing the connections left", "timeout", timeout)
	abort()
	for _, one := range l.list {
		_ = one.srv.Close()
	}
}

// firstRequestPatience is how long shutdown waits for the first request
// of a connection accepted just before its listener closed.
const firstRequestPatience = 2 * time.Second

// Close closes the listening sockets, those bound and never served too.
func (l *Listeners) Close() {
	for _, one := range l.list {
		one.ln.Close()
	}
	for _, ln := range l.bound {
		ln.Close()
	}
	clear(l.bound)
}
