package server

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/coreos/go-systemd/v22/activation"
)

// The names of passed sockets (LISTEN_FDNAMES, FileDescriptorName=): the
// flags whose bind each replaces.
const (
	NameListen = "listen" // --listen
	NameHTTP   = "http"   // --http-listen
	NameHTTPS  = "https"  // --https-listen
)

var socketNames = []string{NameListen, NameHTTP, NameHTTPS}

// FromSystemd takes the sockets systemd passed (socket activation), by
// name, and clears the variables so that no child takes them again. A
// single socket of any other name (systemd's default) is --listen's. With
// none it returns an empty map.
func FromSystemd() (map[string]net.Listener, error) {
	files := activation.Files(true)
	out := map[string]net.Listener{}
	fail := func(err error) (map[string]net.Listener, error) {
		for _, ln := range out {
			ln.Close()
		}
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	for _, f := range files {
		name := f.Name()
		if len(files) == 1 && !slices.Contains(socketNames, name) {
			name = NameListen
		}
		if !slices.Contains(socketNames, name) {
			return fail(fmt.Errorf("systemd passed a socket named %q: name each socket after its flag with FileDescriptorName=listen, http or https", f.Name()))
		}
		if out[name] != nil {
			return fail(fmt.Errorf("systemd passed two sockets named %q", name))
		}
		ln, err := net.FileListener(f)
		if err != nil {
			return fail(fmt.Errorf("the socket %q systemd passed: %w (it must be a listening TCP socket: ListenStream=)", name, err))
		}
		out[name] = ln
	}
	for _, f := range files {
		f.Close() // FileListener made its own descriptor
	}
	return out, nil
}

// Inherit gives the listeners systemd's sockets by name: Bind takes one
// instead of binding.
func (l *Listeners) Inherit(sockets map[string]net.Listener) {
	l.inherited = sockets
}

// Unused closes systemd's sockets that no Bind took and returns an error
// naming them: a socket for a listener that is off is a set-up mistake.
func (l *Listeners) Unused() error {
	names := slices.Sorted(maps.Keys(l.inherited))
	for _, ln := range l.inherited {
		ln.Close()
	}
	l.inherited = nil
	if len(names) == 0 {
		return nil
	}
	flags := make([]string, len(names))
	for i, name := range names {
		flags[i] = map[string]string{NameListen: "--listen", NameHTTP: "--http-listen", NameHTTPS: "--https-listen"}[name]
	}
	return fmt.Errorf("sockets were passed for %v, but their flags are not given: %s", names, strings.Join(flags, ", "))
}
