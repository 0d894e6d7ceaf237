package handlers

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
)

// Listeners are the service's listening sockets, each with the server that
// serves it, all behind one ConnGuard.
type Listeners struct {
	conns *ConnGuard
	list  []listener
}

type listener struct {
	ln  net.Listener
	srv *http.Server
}

// NewListeners returns an empty set whose connections conns admits.
func NewListeners(conns *ConnGuard) *Listeners { return &Listeners{conns: conns} }

// Listen opens addr for srv (with TLS when srv has a TLSConfig) and returns
// the address it got, which names the port when addr asked for port 0.
func (l *Listeners) Listen(addr string, srv *http.Server) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ln = l.conns.Listener(ln)
	l.conns.Track(srv)
	if srv.TLSConfig != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	l.list = append(l.list, listener{ln, srv})
	return ln.Addr(), nil
}

// Serve serves every listener until ctx ends (it then returns nil, and the
// caller shuts the servers down) or one of them fails (its error).
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

// Servers are the servers, for ShutdownServers.
func (l *Listeners) Servers() []*http.Server {
	servers := make([]*http.Server, len(l.list))
	for i, one := range l.list {
		servers[i] = one.srv
	}
	return servers
}

// Close closes the listening sockets.
func (l *Listeners) Close() {
	for _, one := range l.list {
		one.ln.Close()
	}
}
