package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"petstore/handlers"
	"petstore/store"
)

// finishStart writes the admin token and the deploy record once the
// database takes them, retrying with back-off until then or shutdown.
func finishStart(ctx context.Context, db store.Store, srv *handlers.Server, adminToken string, log *slog.Logger) {
	tokenDone := false
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		// A store still reaching its database says when it has: try then.
		if r, ok := db.(interface{ WaitReady(context.Context) error }); ok && r.WaitReady(ctx) != nil {
			return
		}
		var token string
		var err error
		if !tokenDone {
			if token, err = db.EnsureAdminToken(ctx, adminToken); err == nil {
				tokenDone = true
				srv.AwaitAdminToken("")
				if token != "" {
					log.Warn("generated the admin token (shown once: only its hash is stored)", "admin_token", token)
				}
			}
		}
		if err == nil {
			if err = srv.RecordDeploy(ctx); err == nil {
				log.Info("start-up's writes are done: the database takes writes")
				return
			}
		}
		log.Warn(fmt.Sprintf("start-up's writes wait for the database; retrying in %v", wait), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// printBanner says where everything is; a just-generated admin token is
// shown once, since only its hash is stored.
func printBanner(w io.Writer, cfg config, addr net.Addr, newToken string) {
	base := "http://" + addr.String()
	if host, port, err := net.SplitHostPort(cfg.listen); err == nil && host == "localhost" {
		_, realPort, _ := net.SplitHostPort(addr.String())
		if port == "0" || port == "" {
			port = realPort
		}
		base = "http://localhost:" + port
	}
	fmt.Fprintf(w, "petstore: listening on %s\n", base)
	fmt.Fprintf(w, "  site (API reference)  %s/\n", base)
	fmt.Fprintf(w, "  API                   %s/pets, %s/categories, %s/store/...\n", base, base, base)
	fmt.Fprintf(w, "  spec                  %s/openapi.yaml (and .json)\n", base)
	fmt.Fprintf(w, "  dashboard             %s/dashboard/\n", base)
	fmt.Fprintf(w, "  admin API             %s/admin/... (spec at /admin/openapi.yaml and .json, with the admin token)\n", base)
	fmt.Fprintf(w, "  backup, metrics       %s/admin/backup, %s/metrics (with the admin token)\n", base, base)
	fmt.Fprintf(w, "  data                  %s\n", cfg.dataDescription())
	switch {
	case newToken != "":
		fmt.Fprintf(w, "  admin token           %s\n", newToken)
		fmt.Fprintln(w, "                        (shown once: only its hash is stored; start with --admin-token to replace it)")
	case cfg.adminToken != "":
		fmt.Fprintln(w, "  admin token           the one given with --admin-token / PETSTORE_ADMIN_TOKEN")
	default:
		fmt.Fprintln(w, "  admin token           printed at first start (lost it? start once with a new one: --admin-token, 32 characters or more)")
	}
}
