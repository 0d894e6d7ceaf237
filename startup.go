package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"petstore/handlers"
	"petstore/store"
)

// finishStart makes start-up's writes (the admin token, the deploy record)
// once the database takes them, retrying with back-off until it does or
// the service stops.
func finishStart(ctx context.Context, db store.Store, srv *handlers.Server, adminToken string, log *slog.Logger) {
	tokenDone := false
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		// A store still reaching its database says when it has: try then.
		if r, ok := db.(interface{ WaitReady(context.Context) error }); ok && r.WaitReady(ctx) != nil {
			return
		}
		var err error
		if !tokenDone {
			var token string
			token, err = db.EnsureAdminToken(ctx, adminToken)
			if err == nil {
				tokenDone = true
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
