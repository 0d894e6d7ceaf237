package server

import (
	"fmt"
	"net"
	"slices"
	"sort"

	"github.com/coreos/go-systemd/v22/activation"
)

// The names of passed sockets: the flags whose bind each one replaces
// (LISTEN_FDNAMES, FileDescriptorName= in a systemd socket unit).
const (
	NameListen = "listen" // --listen
	NameHTTP   = "http"   // --http-listen
	NameHTTPS  = "https"  // --https-listen
)

var socketNames = []string{NameListen, NameHTTP, NameHTTPS}

// FromSystemd takes the listening sockets systemd passed to the process
// (socket activation: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES), by name, and
// clears those variables so that no child takes them again. A single socket
// with any other name (systemd names one after its unit by default) is
// --listen's. With none passed it returns an empty map.
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

// Inherit gives the listeners sockets systemd opened before the process
// started, by name: Bind takes one instead of binding its address.
func (l *Listeners) Inherit(sockets map[string]net.Listener) {
	l.inherited = sockets
}

// Unused closes the sockets systemd passed that no Bind took, and returns an
// error naming them: a socket passed for a listener that is off is a
// mistake in the set-up, not something to ignore.
func (l *Listeners) Unused() error {
	var names []string
	for name, ln := range l.inherited {
		ln.Close()
		names = append(names, name)
	}
	l.inherited = nil
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return fmt.Errorf("sockets were passed for %v, whose flags (--listen, --http-listen, --https-listen) are not set", names)
}
