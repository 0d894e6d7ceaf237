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
// browser or pooled client needs, far below the process's descriptors.
const DefaultMaxClientConns = 256

// ConnGuard keeps one client from holding the process's descriptors on
// every listener it wraps: a client past maxPerClient has new connections
// closed; when descriptors run short, idle and not-yet-used connections of
// the biggest clients are closed first. Idleness comes from ConnState.
type ConnGuard struct {
	maxPerClient int // 0: no cap
	// highWater: open connections past which idle ones are closed; 0 when
	// the descriptor limit is unknown.
	highWater, reserve int

	mu        sync.Mutex
	perClient map[clientkey.Key]int
	conns     map[*guardedConn]struct{} // open

	// For /metrics; see Closed.
	clientCapped, shed, refused atomic.Uint64
}

// NewConnGuard raises the soft limit on open files to the hard one and
// returns a guard for it. fileLimit is the limit in force (0 if unknown);
// err, not fatal, says why it could not be raised.
func NewConnGuard(maxPerClient int) (g *ConnGuard, fileLimit int, err error) {
	fileLimit, err = raiseFileLimit()
	g = &ConnGuard{maxPerClient: maxPerClient, perClient: map[clientkey.Key]int{}, conns: map[*guardedConn]struct{}{}}
	if fileLimit > 0 {
		// Other descriptors (data file, DNS and ACME sockets, backups) need room.
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
// accept at their client's cap, idle ones as descriptors ran short, and
// new ones then with nothing idle to close.
func (g *ConnGuard) Closed() (clientCap, idle, refused uint64) {
	return g.clientCapped.Load(), g.shed.Load(), g.refused.Load()
}

// Listener wraps ln so that its connections are counted and capped.
func (g *ConnGuard) Listener(ln net.Listener) net.Listener {
	return &guardedListener{Listener: ln, g: g}
}

// connState is the http.Server's ConnState. It runs twice per keep-alive
// request: atomic stores, no lock.
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
			// Out of descriptors: make room and retry at once; with nothing to
			// close, the http.Server retries after a pause.
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

func (g *ConnGuard) shedIdle(n int) int {
	g.mu.Lock()
	victims := g.pickIdle(n)
	g.mu.Unlock()
	g.closeAll(victims)
	return len(victims)
}

// pickIdle returns up to n idle connections, the biggest clients' first,
// marked busy so they are picked once. g.mu is held.
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
		// Under any TLS: a close_notify could block on the client.
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
	// idle: between requests or before the first, when closing loses no
	// answer.
	idle atomic.Bool
	// state is the http.ConnState; h2 is set once it serves HTTP/2; accepted
	// is when it was admitted. See unanswered.
	state    atomic.Int32
	h2       atomic.Bool
	accepted time.Time
	// read is set once the server first reads it: until then its request,
	// if sent, waits in the socket or in the PROXY protocol reader's
	// buffer, which no peek sees.
	read atomic.Bool
}

func (c *guardedConn) Read(b []byte) (int, error) {
	if !c.read.Load() {
		c.read.Store(true)
	}
	return c.Conn.Read(b)
}

// unanswered reports whether an HTTP/1 connection may hold a request that
// net/http would drop if shutdown began now: one being read or served,
// sent and unread, not read by the server at all yet, or the first of a
// connection accepted within patience
// (on a loaded machine it may not be read before Shutdown gives up on it).
// A silent connection holds shutdown no longer than patience.
func (g *ConnGuard) unanswered(patience time.Duration) bool {
	g.mu.Lock()
	var check []*guardedConn
	for c := range g.conns {
		if c.h2.Load() {
			continue
		}
		switch st := http.ConnState(c.state.Load()); {
		case st == http.StateActive || st == http.StateNew && (time.Since(c.accepted) < patience || !c.read.Load()):
			g.mu.Unlock()
			return true
		case st == http.StateNew || st == http.StateIdle:
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
