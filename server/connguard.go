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
// an atomic store, no lock.
func (g *ConnGuard) connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if gc, ok := c.(*guardedConn); ok {
		gc.idle.Store(st == http.StateNew || st == http.StateIdle)
		if st != http.StateNew {
			gc.fresh.Store(false)
		}
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
	gc.fresh.Store(true)
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
	// fresh is set until the first request starts being read, accepted
	// when the connection was admitted: see settled.
	fresh    atomic.Bool
	accepted time.Time
}

// settled reports whether no connection waits for its first request to be
// read, counting only those accepted within patience (a client that opened
// a connection and sent nothing, or one whose HTTP/2 the guard cannot
// follow, does not hold shutdown longer). net/http drops a request it reads
// once Shutdown has begun, which may be the first one of a connection
// accepted just before its listener closed; requests being served are
// waited for by Shutdown itself.
func (g *ConnGuard) settled(patience time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		if c.fresh.Load() && time.Since(c.accepted) < patience {
			return false
		}
	}
	return true
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
