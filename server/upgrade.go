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

// Upgrader replaces the running process with a new one started from the
// binary on disk, with the same arguments and environment, and hands it
// the listening sockets (github.com/cloudflare/tableflip): the sockets stay
// open throughout, so that connections arriving during the upgrade wait in
// their backlog instead of being refused.
//
// A process may hold one Upgrader only (tableflip's rule): main makes it,
// and tests that run the service in-process go without.
type Upgrader struct {
	tf *tableflip.Upgrader
}

// NewUpgrader returns the process's Upgrader, nil where the system cannot
// pass sockets to a new process (Windows). In a process started by an
// upgrade it takes the sockets the old process passed.
func NewUpgrader() (*Upgrader, error) {
	tf, err := tableflip.New(tableflip.Options{})
	if errors.Is(err, tableflip.ErrNotSupported) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &Upgrader{tf: tf}, nil
}

// Replacing reports whether this process was started by an upgrade, to
// replace the one that started it.
func (u *Upgrader) Replacing() bool { return u != nil && u.tf.HasParent() }

// Ready tells the process that started this one (if any) that it can stop
// accepting: this one has the sockets and is about to serve. It also tells
// systemd, when the service runs under it, that this process is now the
// service's main one (MAINPID=, with NotifyAccess=all in the unit), before
// the old one exits. Sockets inherited and not taken are closed.
func (u *Upgrader) Ready() error {
	if u == nil {
		return nil
	}
	notifySystemd(fmt.Sprintf("MAINPID=%d", os.Getpid()))
	return u.tf.Ready()
}

// WaitForOld waits until the process that started this one has exited, or
// ctx ends.
func (u *Upgrader) WaitForOld(ctx context.Context) error {
	if u == nil {
		return nil
	}
	return u.tf.WaitForParent(ctx)
}

// Upgrade starts the binary on disk and waits until it is Ready (nil), or
// has failed: it exited, could not be started, or was not ready within
// tableflip's upgrade timeout (a minute), in which case it is killed. On
// success this process must stop accepting and exit.
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

// listener returns the socket of name that the old process passed, or else
// the one open returns, and keeps it for the next process.
func (u *Upgrader) listener(name string, open func() (net.Listener, error)) (net.Listener, error) {
	if u == nil {
		return open()
	}
	// tableflip wraps open's error as text: kept here, so that the caller
	// can still tell a busy port (EADDRINUSE) from any other failure.
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

// PacketAndListener returns the UDP and TCP sockets of name (a DNS server's,
// which answers on both) that the old process passed, or else those open
// returns, and keeps them for the next process.
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
		closeAll(pc, ln)
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
	if err := u.tf.AddPacketConn("udp", name, upc); err != nil {
		closeAll(pc, ln)
		return nil, nil, err
	}
	if err := u.tf.AddListener("tcp", name, uln); err != nil {
		closeAll(pc, ln)
		return nil, nil, err
	}
	return pc, ln, nil
}

func closeAll(pc net.PacketConn, ln net.Listener) {
	if pc != nil {
		pc.Close()
	}
	if ln != nil {
		ln.Close()
	}
}

// NotifyReady tells systemd, when the service runs under it (Type=notify),
// that the service is up.
func NotifyReady() {
	notifySystemd(fmt.Sprintf("MAINPID=%d\nREADY=1", os.Getpid()))
}

// notifySystemd sends state to systemd's notification socket, when there
// is one (NOTIFY_SOCKET); it is kept for the process an upgrade starts.
func notifySystemd(state string) { _, _ = daemon.SdNotify(false, state) }
