package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/cloudflare/tableflip"
	"github.com/coreos/go-systemd/v22/daemon"
)

// Upgrader replaces the running process with one started from the binary
// on disk (tableflip), handing it the listening sockets, which stay open
// so that connections arriving meanwhile wait in their backlog. A process
// may hold one Upgrader only: main makes it, in-process tests go without.
type Upgrader struct {
	tf *tableflip.Upgrader
}

// NewUpgrader returns the process's Upgrader, nil where sockets cannot be
// passed (Windows). Started by an upgrade, it takes the passed sockets.
func NewUpgrader() (*Upgrader, error) {
	tf, err := tableflip.New(tableflip.Options{})
	if errors.Is(err, tableflip.ErrNotSupported) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &Upgrader{tf: tf}, nil
}

// Replacing reports whether an upgrade started this process.
func (u *Upgrader) Replacing() bool { return u != nil && u.tf.HasParent() }

// Ready tells the process that started this one that it can stop
// accepting, and systemd (with NotifyAccess=all) that this is now the
// main process, before the old one exits. Sockets inherited and not taken
// are closed.
func (u *Upgrader) Ready() error {
	if u == nil {
		return nil
	}
	notifySystemd(fmt.Sprintf("MAINPID=%d", os.Getpid()))
	return u.tf.Ready()
}

// WaitForOld waits until the process that started this one has exited or
// ctx ends.
func (u *Upgrader) WaitForOld(ctx context.Context) error {
	if u == nil {
		return nil
	}
	return u.tf.WaitForParent(ctx)
}

// Upgrade starts the binary on disk and waits until it is Ready (nil) or
// failed: exited, not started, or not ready within tableflip's timeout
// (then killed). On success this process must stop accepting and exit.
func (u *Upgrader) Upgrade() error {
	if u == nil {
		return errors.New("this system cannot pass sockets to a new process")
	}
	return u.tf.Upgrade()
}

// Stop refuses upgrades from now on (at shutdown).
func (u *Upgrader) Stop() {
	if u != nil {
		u.tf.Stop()
	}
}

// listener returns the socket of name the old process passed, else open's,
// and keeps it for the next process.
func (u *Upgrader) listener(name string, open func() (net.Listener, error)) (net.Listener, error) {
	if u == nil {
		return open()
	}
	// Kept, so that the caller can still tell EADDRINUSE from other failures
	// (tableflip wraps it as text).
	var openErr error
	ln, err := u.tf.ListenWithCallback("tcp", name, func(string, string) (net.Listener, error) {
		ln, err := open()
		openErr = err
		return ln, err
	})
	if err != nil && openErr != nil {
		return nil, openErr
	}
	return ln, err
}

// PacketAndListener is listener for a DNS server's UDP and TCP sockets.
func (u *Upgrader) PacketAndListener(name string, open func() (net.PacketConn, net.Listener, error)) (net.PacketConn, net.Listener, error) {
	if u == nil {
		return open()
	}
	pc, err := u.tf.PacketConn("udp", name)
	if err != nil {
		return nil, nil, err
	}
	ln, err := u.tf.Listener("tcp", name)
	if err != nil || (pc == nil) != (ln == nil) {
		CloseSockets(pc, ln)
		if err == nil {
			err = fmt.Errorf("the old process passed only one of the UDP and TCP sockets of %s", name)
		}
		return nil, nil, err
	}
	if pc != nil {
		return pc, ln, nil
	}
	if pc, ln, err = open(); err != nil {
		return nil, nil, err
	}
	upc, ok1 := pc.(tableflip.PacketConn)
	uln, ok2 := ln.(tableflip.Listener)
	if !ok1 || !ok2 {
		return pc, ln, nil // not a socket that can be passed on; served all the same
	}
	if err = u.tf.AddPacketConn("udp", name, upc); err == nil {
		err = u.tf.AddListener("tcp", name, uln)
	}
	if err != nil {
		CloseSockets(pc, ln)
		return nil, nil, err
	}
	return pc, ln, nil
}

// CloseSockets closes a DNS server's sockets, those that are not nil.
func CloseSockets(pc net.PacketConn, ln net.Listener) {
	if pc != nil {
		pc.Close()
	}
	if ln != nil {
		ln.Close()
	}
}

// NotifyReady tells systemd (Type=notify) that the service is up.
func NotifyReady() {
	notifySystemd(fmt.Sprintf("MAINPID=%d\nREADY=1", os.Getpid()))
}

// notifySystemd sends state to NOTIFY_SOCKET, when set; it is kept for the
// process an upgrade starts.
func notifySystemd(state string) { _, _ = daemon.SdNotify(false, state) }
