package postgres

import (
	"context"
	"net"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// goodHost makes each new connection of a multi-host URL try first the
// host that answered last: pgx tries the hosts in the URL's order, so a
// first host that never answers would cost every new connection the
// connect timeout. A connection knows only the address it reached, so
// goodHost wraps the lookup function to learn which names gave which
// address.
type goodHost struct {
	mu    sync.Mutex
	ip    string // the address the latest connection reached
	port  uint16
	names map[string][]string // the names each address was looked up by
}

func (g *goodHost) answered(h string, port uint16) bool {
	return g.ip != "" && port == g.port && (h == g.ip || slices.Contains(g.names[g.ip], h))
}

func (g *goodHost) install(cfg *pgxpool.Config) {
	if lookup := cfg.ConnConfig.LookupFunc; lookup != nil {
		cfg.ConnConfig.LookupFunc = func(ctx context.Context, host string) ([]string, error) {
			addrs, err := lookup(ctx, host)
			g.mu.Lock()
			for _, a := range addrs {
				if ip, _, err := net.SplitHostPort(a); err == nil {
					a = ip
				}
				if !slices.Contains(g.names[a], host) && len(g.names) < 1024 { // a URL names a handful of hosts
					g.names[a] = append(g.names[a], host)
				}
			}
			g.mu.Unlock()
			return addrs, err
		}
	}
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		if len(cc.Fallbacks) == 0 {
			return nil
		}
		all := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
		g.mu.Lock()
		good := slices.IndexFunc(all, func(f *pgconn.FallbackConfig) bool { return g.answered(f.Host, f.Port) })
		g.mu.Unlock()
		if good <= 0 {
			return nil
		}
		all = append(append([]*pgconn.FallbackConfig{all[good]}, all[:good]...), all[good+1:]...)
		cc.Host, cc.Port, cc.TLSConfig, cc.Fallbacks = all[0].Host, all[0].Port, all[0].TLSConfig, all[1:]
		return nil
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		if tcp, ok := c.PgConn().Conn().RemoteAddr().(*net.TCPAddr); ok {
			remote := tcp.AddrPort()
			g.mu.Lock()
			g.ip, g.port = remote.Addr().Unmap().String(), remote.Port()
			g.mu.Unlock()
		}
		return nil
	}
}
