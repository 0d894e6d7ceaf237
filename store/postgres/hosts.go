package postgres

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// goodHost makes each new connection of a multi-host URL try first the
// host that answered last: pgx tries the hosts in the URL's order, so a
// first host that never answers would cost every new connection the
// connect timeout. After a failover the remembered host refuses (down, or
// a standby under target_session_attrs=read-write) and the next one that
// answers is remembered instead.
type goodHost struct {
	mu   sync.Mutex
	addr string // host:port as the URL names it
}

func (g *goodHost) install(cfg *pgxpool.Config) {
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		g.mu.Lock()
		addr := g.addr
		g.mu.Unlock()
		if addr == "" || len(cc.Fallbacks) == 0 {
			return nil
		}
		all := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
		key := func(f *pgconn.FallbackConfig) string { return net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))) }
		slices.SortStableFunc(all, func(a, b *pgconn.FallbackConfig) int {
			switch {
			case key(a) == addr && key(b) != addr:
				return -1
			case key(a) != addr && key(b) == addr:
				return 1
			}
			return 0
		})
		cc.Host, cc.Port, cc.TLSConfig, cc.Fallbacks = all[0].Host, all[0].Port, all[0].TLSConfig, all[1:]
		return nil
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		if remote := c.PgConn().Conn().RemoteAddr(); remote != nil && remote.Network() == "tcp" {
			g.mu.Lock()
			g.addr = remote.String()
			g.mu.Unlock()
		}
		return nil
	}
}
