package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"petstore/domains/acmedns"
	"petstore/handlers"
	"petstore/server"
)

// An upgrade in place: on SIGHUP the process starts the binary on disk and
// hands it every listening socket (docs/operations.md, "Upgrading in
// place").

// upgrades is the process's Upgrader and its SIGHUPs; tests calling run
// in-process give none (a process may hold one Upgrader only).
type upgrades struct {
	upgrader *server.Upgrader
	signals  <-chan os.Signal
}

// oldExitMargin is how much longer than twice --shutdown-timeout (its
// backup downloads, then its shutdown) an upgrade's new process waits for
// the old one to exit: the old one also waits for just-accepted
// connections' first requests and stops background work.
const oldExitMargin = 30 * time.Second

// boundSockets are the non-HTTP sockets bindSockets opened: the DNS
// server's, served once the store is open.
type boundSockets struct {
	dnsPacket net.PacketConn
	dnsStream net.Listener
}

// bindSockets opens every socket before the store (an upgrade's, else
// systemd's, else new), so that a busy port fails the start before any
// file is created.
func bindSockets(cfg config, listeners *server.Listeners, u *server.Upgrader) (*boundSockets, error) {
	systemd, err := server.FromSystemd()
	if err != nil {
		return nil, err
	}
	listeners.Inherit(systemd)
	listeners.HandOver(u)
	if len(cfg.proxyProtocolFrom) > 0 {
		if err := listeners.ReadProxyProtocolFrom(cfg.proxyProtocolFrom); err != nil {
			return nil, err
		}
	}
	for _, l := range []struct{ name, flag, addr string }{
		{server.NameListen, "listen", cfg.listen},
		{server.NameHTTPS, "https-listen", cfg.httpsListen},
		{server.NameHTTP, "http-listen", cfg.httpListen},
	} {
		if l.addr == "" && l.name != server.NameListen {
			continue
		}
		if _, err := listeners.Bind(l.name, l.addr); err != nil {
			return nil, listenError(l.flag, l.addr, err)
		}
	}
	if err := listeners.Unused(); err != nil {
		return nil, err
	}
	b := &boundSockets{}
	switch {
	case cfg.acmeDNSZone != "":
		b.dnsPacket, b.dnsStream, err = u.PacketAndListener("dns", func() (net.PacketConn, net.Listener, error) {
			return acmedns.Listen(cmp.Or(cfg.dnsListen, ":53"))
		})
		if err != nil {
			return nil, err
		}
	case cfg.dnsListen != "":
		return nil, errors.New("--dns-listen needs --acme-dns-zone: it serves that zone only")
	}
	return b, nil
}

// take hands the DNS server's sockets to their server, which closes them.
func (b *boundSockets) take() (net.PacketConn, net.Listener) {
	pc, ln := b.dnsPacket, b.dnsStream
	b.dnsPacket, b.dnsStream = nil, nil
	return pc, ln
}

// close closes the sockets no server took.
func (b *boundSockets) close() { server.CloseSockets(b.dnsPacket, b.dnsStream) }

// handover is this process's part in upgrades in place, as the new
// process of one and the old of the next.
type handover struct {
	up  upgrades
	cfg config
	log *slog.Logger
	// stopped is when this new process told the old one to stop accepting
	// before it could serve itself (bbolt); zero otherwise.
	stopped time.Time
	// upgraded is set once a new process took over from this one.
	upgraded atomic.Bool
	// prepared is set when beforeStore called its prepare.
	prepared bool
	// upgrading runs upgradeOnSignal.
	upgrading sync.WaitGroup
}

// prepareInBackground runs handlers.Prepare beside the rest of start-up;
// the function returned waits for it. A start failing before it is needed
// fails as fast as without it.
func prepareInBackground(spec []byte) func() (*handlers.Prepared, error) {
	prepared := sync.OnceValues(func() (*handlers.Prepared, error) { return handlers.Prepare(spec) })
	go prepared()
	return prepared
}

// beforeStore runs before the store opens. In an upgrade's new process on
// a bbolt file it calls prepare, then tells the old process to stop and
// waits for it to exit, releasing the file.
func (h *handover) beforeStore(ctx context.Context, prepare func() error) error {
	u := h.up.upgrader
	if !u.Replacing() {
		return nil
	}
	if h.cfg.database != "" {
		h.log.Info("upgrade: this process has the listening sockets of the old one, which serves until this one is ready", "pid", os.Getpid())
		return nil
	}
	h.prepared = true
	if err := prepare(); err != nil {
		return err
	}
	// Checked while the old process still serves: past here a failure leaves
	// nothing serving.
	f, err := os.OpenFile(h.cfg.data, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("upgrade: the data file: %w; the old process goes on serving", err)
	}
	f.Close()
	h.log.Info("upgrade: this process has the listening sockets of the old one, which now stops accepting (once its backup downloads end, if any), finishes its requests and closes the data file; new connections wait in the sockets' backlog until this one serves", "pid", os.Getpid())
	h.stopped = time.Now()
	if err := u.Ready(); err != nil {
		return fmt.Errorf("upgrade: telling the old process to stop: %w", err)
	}
	wait := 2*h.cfg.shutdownTimeout + oldExitMargin
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := u.WaitForOld(waitCtx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("upgrade: stopped while waiting for the old process to exit: %w", ctx.Err())
		}
		return fmt.Errorf("upgrade: the old process did not exit within %v (twice --shutdown-timeout and %v): %w", wait, oldExitMargin, err)
	}
	h.log.Info("upgrade: the old process has exited; opening the data file", "waited", time.Since(h.stopped).Round(time.Millisecond))
	return nil
}

// serving is called when this process is about to serve: it tells the old
// process to stop (where beforeStore did not) and systemd that it is
// ready, and returns a context ending with ctx or once a new process took
// over on SIGHUP.
func (h *handover) serving(ctx context.Context) (context.Context, error) {
	u := h.up.upgrader
	if h.stopped.IsZero() {
		if err := u.Ready(); err != nil {
			return nil, fmt.Errorf("upgrade: telling the old process to stop: %w", err)
		}
		if u.Replacing() {
			h.log.Info("upgrade: this process serves; the old one now stops accepting and finishes its requests")
		}
	} else {
		h.log.Info("upgrade: this process serves", "unserved", time.Since(h.stopped).Round(time.Millisecond))
	}
	server.NotifyReady()
	if u == nil || h.up.signals == nil {
		return ctx, nil
	}
	serving, stop := context.WithCancel(ctx)
	h.upgrading.Go(func() { h.upgradeOnSignal(serving, stop) })
	return serving, nil
}

// upgradeOnSignal upgrades on each SIGHUP until one succeeds, then calls
// stop: this process stops serving.
func (h *handover) upgradeOnSignal(ctx context.Context, stop context.CancelFunc) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.up.signals:
		}
		binary := os.Args[0]
		if p, err := exec.LookPath(binary); err == nil {
			binary = p
		}
		h.log.Info("upgrade: SIGHUP: starting the binary on disk to take over from this process", "binary", binary)
		err := h.up.upgrader.Upgrade()
		// One upgrade at a time: a SIGHUP received meanwhile is dropped, saying
		// so. (One received while starting is acted on once serving.)
		select {
		case <-h.up.signals:
			h.log.Warn("upgrade: SIGHUP ignored: it came during an upgrade; send it again")
		default:
		}
		if err != nil && ctx.Err() != nil {
			h.log.Warn("upgrade abandoned: shutting down; the new process is stopped", "err", err)
			return
		} else if err != nil {
			h.log.Error("upgrade failed: this process goes on serving", "err", err)
			continue
		}
		h.log.Info("upgrade: the new process has the listening sockets; this one stops accepting (once its backup downloads end, if any) and finishes its requests (within --shutdown-timeout)")
		h.upgraded.Store(true)
		stop()
		return
	}
}

// done is called when run ends, after the store is closed.
func (h *handover) done(err error) {
	switch {
	case err != nil && !h.stopped.IsZero():
		h.log.Error("upgrade failed after the old process stopped: nothing serves now; start the service again (the old binary, if the new one cannot start)", "err", err)
	case h.upgraded.Load():
		h.log.Info("upgrade: this process has closed the store and exits; the new one serves")
	}
}
