package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
)

// TestStoreCapabilitiesComeFromTheConfig: what a store can do beyond
// handlers.Store (a backup, damage reports; shared key lookups) is what
// Config.File and Config.Shared say, never found by asking the store's
// type: a bbolt store given without File has no backup, and a Config
// whose File or Shared is not its Store, or that sets both, is refused.
func TestStoreCapabilitiesComeFromTheConfig(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) { c.File = nil })
	ts.adminDo(http.MethodGet, "/admin/backup", "").wantError(http.StatusNotImplemented, store.ENOTSUPPORTED)

	db, other := domaintest.OpenStore(t), domaintest.OpenStore(t)
	for name, edit := range map[string]func(*handlers.Config){
		"File is another store": func(c *handlers.Config) { c.File = other },
		"File and Shared":       func(c *handlers.Config) { c.Shared = fakeShared{} },
	} {
		_, err := handlers.New(serverConfig(t, db, edit))
		if err == nil || !strings.Contains(err.Error(), "Config.File") {
			t.Errorf("%s: New gave %v, want an error naming Config.File", name, err)
		}
	}
}

// fakeShared claims to be a shared store; New must refuse it beside File
// before anything calls it.
type fakeShared struct{ handlers.SharedStore }
