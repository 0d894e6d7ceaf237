package server

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"petstore/server/clientkey"
)

// DefaultMaxClientConns is the default cap on the connections one client
// (an IPv4 address or an IPv6 /64) holds open at once: far above what a
// browser (6 per host) or a pooled API client needs, far below the
// descriptors a process has.
const DefaultMaxClientConns = 256

// ConnGuard keeps one client from holding the process's file descriptors,
// on every listener it wraps (plain, TLS, the HTTP challenge listener):
//
//   - a client past maxPerClient open connections has its new ones closed
//     at once, while everyone else goes on being served;
//   - when descriptors run short (open connections near the limit, or
//     accept failing with EMFILE/ENFILE), idle keep-alive connections and
//     connections that have not sent a request yet are closed, those of the
//     clients holding the most first, so that new clients get in.
//
// A connection is counted from accept to close. Idleness comes from the
// http.Server's ConnState (set by Listeners.Listen).
type ConnGuard struct {
	maxPerClient int // 0: no cap
	// highWater is the number of open connections past which idle ones are
	// closed; 0 when the limit on descriptors is unknown.
	highWater, reserve int

	mu        sync.Mutex
	perClient map[clientkey.Key]int
	conns     map[*guardedConn]struct{} // open

	// For /metrics: connections closed at accept because their client was
	// at its cap, idle ones closed because descriptors ran short, and new
	// ones closed at accept for that reason with nothing idle to close.
	clientCapped, shed, refused atomic.Uint64
}

// NewConnGuard raises the soft limit on open files to the hard one and
// returns a guard for it. fileLimit is the limit in force (0 if unknown);
// err says why it could not be raised, which is not fatal.
func NewConnGuard(maxPerClient int) (g *ConnGuard, fileLimit int, err error) {
	fileLimit, err = raiseFileLimit()
	g = &ConnGuard{maxPerClient: maxPerClient, perClient: map[clientkey.Key]int{}, conns: map[*guardedConn]struct{}{}}
	if fileLimit > 0 {
		// Descriptors other than connections (the data file, DNS and ACME
		// sockets, backups' files) need room too.
		g.reserve = max(32, fileLimit/8)
		g.highWater = max(fileLimit-g.reserve, 1)
	}
	return g, fileLimit, err
}

// Open is the number of connections open.
func (g *ConnGuard) Open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// Closed is how many connections the guard closed since the start: at
// accept because their client was at its cap, idle ones because descriptors
// ran short, and new ones at accept for that reason with nothing idle to
// close.
func (g *ConnGuard) Closed() (clientCap, idle, refused uint64) {
	return g.clientCapped.Load(), g.shed.Load(), g.refused.Load()
}

// Listener wraps ln so that its connections are counted and capped.
func (g *ConnGuard) Listener(ln net.Listener) net.Listener {
	return &guardedListener{Listener: ln, g: g}
}

// connState is the http.Server's ConnState: it follows the connections
// between requests. It runs twice per request on a keep-alive connection:
// atomic stores, no lock.
func (g *ConnGuard) connState(c net.Conn, st http.ConnState) {
	tc, _ := c.(*tls.Conn)
	if tc != nil {
		c = tc.NetConn()
	}
	if gc, ok := c.(*guardedConn); ok {
		gc.idle.Store(st == http.StateNew || st == http.StateIdle)
		// Shutdown leaves HTTP/2 to net/http, which ends it gracefully.
		if tc != nil && st != http.StateNew && http.ConnState(gc.state.Load()) == http.StateNew {
			gc.h2.Store(tc.ConnectionState().NegotiatedProtocol == "h2")
		}
		gc.state.Store(int32(st))
	}
}

type guardedListener struct {
	net.Listener
	g *ConnGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	g := l.g
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			// Out of descriptors: make room and try again at once; with
			// nothing to close, the error goes to the http.Server, which
			// retries after a pause.
			if (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) && g.shedIdle(max(g.reserve/2, 1)) > 0 {
				continue
			}
			return nil, err
		}
		if gc := g.admit(c); gc != nil {
			return gc, nil
		}
		_ = c.Close()
	}
}

// admit counts c in, or returns nil when c must be closed.
func (g *ConnGuard) admit(c net.Conn) *guardedConn {
	key := clientkey.Of(c.RemoteAddr().String())
	g.mu.Lock()
	if g.maxPerClient > 0 && g.perClient[key] >= g.maxPerClient {
		g.mu.Unlock()
		g.clientCapped.Add(1)
		return nil
	}
	if open := len(g.conns); g.highWater > 0 && open >= g.highWater {
		victims := g.pickIdle(open - g.highWater + g.reserve/2)
		if len(victims) == 0 && open >= g.highWater+g.reserve/2 {
			g.mu.Unlock()
			g.refused.Add(1)
			return nil
		}
		g.mu.Unlock()
		g.closeAll(victims)
		g.mu.Lock()
	}
	gc := &guardedConn{Conn: c, g: g, key: key, accepted: time.Now()}
	g.conns[gc] = struct{}{}
	g.perClient[key]++
	g.mu.Unlock()
	return gc
}

// shedIdle closes up to n idle connections and returns how many.
func (g *ConnGuard) shedIdle(n int) int {
	g.mu.Lock()
	victims := g.pickIdle(n)
	g.mu.Unlock()
	g.closeAll(victims)
	return len(victims)
}

// pickIdle returns up to n idle connections, those of the clients holding
// the most connections first, and marks them busy so that they are picked
// once. g.mu is held.
func (g *ConnGuard) pickIdle(n int) []*guardedConn {
	if n <= 0 {
		return nil
	}
	var victims []*guardedConn
	for c := range g.conns {
		if c.idle.Load() {
			victims = append(victims, c)
		}
	}
	slices.SortFunc(victims, func(a, b *guardedConn) int { return g.perClient[b.key] - g.perClient[a.key] })
	victims = victims[:min(n, len(victims))]
	for _, c := range victims {
		c.idle.Store(false)
	}
	return victims
}

func (g *ConnGuard) closeAll(victims []*guardedConn) {
	for _, c := range victims {
		// The connection under any TLS: its server goroutine sees the
		// read fail and ends; a close_notify could block on the client.
		_ = c.Close()
	}
	g.shed.Add(uint64(len(victims)))
}

// guardedConn is a connection counted by its guard until it is closed.
type guardedConn struct {
	net.Conn
	g      *ConnGuard
	key    clientkey.Key
	closed atomic.Bool
	// idle is set between requests and before the first (http.StateNew,
	// http.StateIdle): closing the connection then loses no answer.
	idle atomic.Bool
	// state is the connection's http.ConnState; h2 is set once it serves
	// HTTP/2; accepted is when it was admitted. See unanswered.
	state    atomic.Int32
	h2       atomic.Bool
	accepted time.Time
}

// unanswered reports whether an HTTP/1 connection may hold a request that
// net/http would drop if it began shutting down now: one being read or
// served, or sent and not read yet (bytes wait in the socket), or the
// first of a connection accepted within patience (its bytes may still be
// on their way). net/http drops a request it reads once Shutdown has begun,
// and its Shutdown closes, unanswered, a connection whose first request it
// has not read within 5 seconds, which a loaded machine can take. A
// connection that was opened and sent nothing (a browser's preconnect)
// does not hold shutdown past patience.
func (g *ConnGuard) unanswered(patience time.Duration) bool {
	g.mu.Lock()
	var check []*guardedConn
	for c := range g.conns {
		if c.h2.Load() {
			continue
		}
		switch http.ConnState(c.state.Load()) {
		case http.StateActive:
			g.mu.Unlock()
			return true
		case http.StateNew:
			if time.Since(c.accepted) < patience {
				g.mu.Unlock()
				return true
			}
			check = append(check, c)
		case http.StateIdle:
			check = append(check, c)
		}
	}
	g.mu.Unlock()
	// Outside the lock: a system call per connection.
	return slices.ContainsFunc(check, func(c *guardedConn) bool { return hasUnread(c.Conn) })
}

func (c *guardedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		g := c.g
		g.mu.Lock()
		delete(g.conns, c)
		if g.perClient[c.key]--; g.perClient[c.key] <= 0 {
			delete(g.perClient, c.key)
		}
		g.mu.Unlock()
	}
	return c.Conn.Close()
}
