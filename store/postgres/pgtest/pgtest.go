// Package pgtest starts a private PostgreSQL cluster for tests: initdb
// into a temporary folder, a server on a free loopback port, and a fresh
// database for each test. initdb's result is kept in the system's
// temporary folder (petstore-pgtest-initdb-*), and later clusters copy it,
// at a fraction of the cost. The server stops when the test binary ends
// (Stop, from TestMain).
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstallHint says how to get the binaries.
const InstallHint = "install PostgreSQL's server (apt-get install -y postgresql); the tests look for initdb and pg_ctl in /usr/lib/postgresql/*/bin or on PATH"

// ErrNotInstalled is Start's error when PostgreSQL's binaries are missing.
var ErrNotInstalled = errors.New("PostgreSQL is not installed: " + InstallHint)

// Cluster is a private PostgreSQL server in a temporary folder.
type Cluster struct {
	dir  string // the temporary folder: data and socket
	bin  string // where initdb and pg_ctl are
	port int
	opts string // the server's options, for Resume
	// durable: fsync and full page writes on, as PostgreSQL's defaults.
	durable bool
	dbs     atomic.Int64
}

// shared is the cluster of the tests, started by the first URL.
var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// URL returns the URL of a new, empty database on the shared private
// cluster, starting the cluster first if this is the first call.
func URL(tb testing.TB) string {
	tb.Helper()
	// Tests trade durability for speed.
	shared.once.Do(func() { shared.cluster, shared.err = Start(false) })
	started(tb, shared.err)
	url, err := shared.cluster.NewDatabase(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return url
}

// started fails tb unless a cluster started; without PostgreSQL's
// binaries the test is skipped, or fails where CI (which installs them)
// is set.
func started(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, ErrNotInstalled) {
		if os.Getenv("CI") != "" {
			tb.Fatalf("PostgreSQL is not installed, so the PostgreSQL tests cannot run: %s", InstallHint)
		}
		tb.Skipf("PostgreSQL is not installed: %s", InstallHint)
	}
	if err != nil {
		tb.Fatalf("starting a private PostgreSQL cluster: %v", err)
	}
}

// Stop stops the shared cluster of the tests, if one was started.
func Stop() {
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
}

// Main runs the tests of a package that uses the shared cluster, then stops
// the cluster: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// NewDatabase creates a new, empty database on the cluster and returns its URL.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.dbs.Add(1))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return "", fmt.Errorf("connecting to the private cluster: %w", err)
	}
	defer conn.Close(ctx)
	// A copy of the template's files costs the server far less CPU than
	// the default, which writes the whole template to the WAL.
	create := "CREATE DATABASE " + name
	major, _, _ := strings.Cut(conn.PgConn().ParameterStatus("server_version"), ".")
	if n, _ := strconv.Atoi(major); n >= 15 && !c.durable {
		create += " STRATEGY FILE_COPY"
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return c.url(name), nil
}

func (c *Cluster) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// Halt stops the server (a fast shutdown) and keeps its data.
func (c *Cluster) Halt() error { return c.ctl("-m", "fast", "-w", "stop") }

// Resume starts a halted server again on its port.
func (c *Cluster) Resume() error {
	return c.ctl("-o", c.opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start")
}

// Reset runs pg_resetwal on the halted cluster's data.
func (c *Cluster) Reset(args ...string) error {
	return runAsPostgres(Program("pg_resetwal"), append([]string{"-D", filepath.Join(c.dir, "data")}, args...)...)
}

// ctl runs pg_ctl on the cluster's data.
func (c *Cluster) ctl(args ...string) error {
	return runAsPostgres(filepath.Join(c.bin, "pg_ctl"), append([]string{"-D", filepath.Join(c.dir, "data")}, args...)...)
}

// NewStandby starts a streaming replica of the cluster on a port of its
// own, stopped at the end of the test.
func (c *Cluster) NewStandby(tb testing.TB) *Cluster {
	tb.Helper()
	dir, err := os.MkdirTemp("", "petstore-pg-standby-")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Cluster{dir: dir, bin: c.bin}
	tb.Cleanup(s.Stop)
	if err := giveToPostgres(dir); err != nil {
		tb.Fatal(err)
	}
	if err := runAsPostgres(Program("pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres",
		"-D", filepath.Join(dir, "data"), "-R", "-X", "stream", "--no-sync", "--checkpoint=fast"); err != nil {
		tb.Fatalf("pg_basebackup: %v", err)
	}
	if err := s.listen(" -c fsync=off -c full_page_writes=off"); err != nil {
		tb.Fatalf("starting the standby: %v", err)
	}
	return s
}

// Promote makes a standby the primary, and waits until it takes writes.
func (c *Cluster) Promote() error { return c.ctl("-w", "promote") }

func (c *Cluster) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

// Program is the path of one of PostgreSQL's programs, from the
// installation the clusters use.
func Program(name string) string {
	if p := filepath.Join(findBin(), name); fileExists(p) {
		return p
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	return name
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Private starts a cluster of the test's own, for a test that stops or
// changes it, and stops it at the end of the test.
func Private(tb testing.TB) *Cluster {
	tb.Helper()
	return private(tb, false)
}

// PrivateDurable is Private with PostgreSQL's durable defaults
// (synchronous commits among them), for a test of commits.
func PrivateDurable(tb testing.TB) *Cluster {
	tb.Helper()
	return private(tb, true)
}

func private(tb testing.TB, durable bool) *Cluster {
	tb.Helper()
	c, err := Start(durable)
	started(tb, err)
	tb.Cleanup(c.Stop)
	return c
}

// Stop stops the server and removes its folder.
func (c *Cluster) Stop() {
	_ = c.ctl("-m", "immediate", "-w", "stop")
	_ = os.RemoveAll(c.dir)
}

func findBin() string {
	if p, err := exec.LookPath("pg_ctl"); err == nil && fileExists(filepath.Join(filepath.Dir(p), "initdb")) {
		return filepath.Dir(p)
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return ""
	}
	return filepath.Dir(matches[len(matches)-1])
}

// Start starts a private cluster on a free loopback port. A durable one
// keeps PostgreSQL's defaults (fsync and the like); otherwise they are off.
func Start(durable bool) (*Cluster, error) {
	c := &Cluster{bin: findBin(), durable: durable}
	if c.bin == "" {
		return nil, ErrNotInstalled
	}
	var err error
	if c.dir, err = os.MkdirTemp("", "petstore-pg-"); err != nil {
		return nil, err
	}
	if err := c.start(durable); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(durable bool) error {
	if err := giveToPostgres(c.dir); err != nil {
		return err
	}
	data := filepath.Join(c.dir, "data")
	if err := c.initdb(data); err != nil {
		return err
	}
	speed := " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	if durable {
		speed = ""
	}
	if err := c.listen(speed); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pg_ctl start: %w\n%s", err, log)
	}
	return nil
}

// listen starts the server on a free port, with the options opts: a taken
// port fails the start, so it tries a few.
func (c *Cluster) listen(opts string) (err error) {
	for range 5 {
		if c.port, err = FreePort(); err != nil {
			return err
		}
		c.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300%s", c.port, c.dir, opts)
		if err = c.Resume(); err == nil {
			return nil
		}
	}
	return err
}

// PostgreSQL refuses to run as root: then the cluster belongs to the
// postgres user.
func asRoot() bool { return os.Geteuid() == 0 }

func giveToPostgres(dir string) error {
	if !asRoot() {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root needs the postgres user, which the postgresql package creates: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

func runAsPostgres(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if asRoot() {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.Join(err, errors.New(string(out)))
	}
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago, below
// the kernel's ephemeral range where it can tell it: a port in that range
// can be taken, between a server's stop and its restart on the same port,
// as the source port of any outgoing connection on the machine. A server
// started on it may still lose a race for it to another test's pick.
func FreePort() (int, error) {
	const first = 10000 // above the well-known and most registered services
	if low := ephemeralLow(); low > first+1 {
		for range 100 {
			port := first + rand.IntN(low-first)
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of Linux's ephemeral range, 0 where it
// cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	low, _ := strconv.Atoi(f[0])
	return low
}

// Installed reports whether PostgreSQL's binaries are there.
func Installed() bool { return findBin() != "" }

// PostmasterPID is the process id of the cluster's server.
func (c *Cluster) PostmasterPID() (int, error) {
	data, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// initdbArgs are the options every cluster is made with.
var initdbArgs = []string{"-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"}

// initdb makes a cluster's data folder: a copy of the one initdb made for
// this installation, or else initdb's own.
func (c *Cluster) initdb(data string) error {
	if kept, err := c.keptInitdb(); err == nil {
		// cp -a keeps the files' owner; a copy that fails falls back to
		// initdb.
		if exec.Command("cp", "-a", kept, data).Run() == nil {
			return nil
		}
		_ = os.RemoveAll(data)
	}
	if err := runAsPostgres(filepath.Join(c.bin, "initdb"), append(slices.Clone(initdbArgs), "-D", data)...); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	return nil
}

// keptInitdb returns the data folder initdb made for this installation
// and initdbArgs, making it first if there is none. Test binaries race to
// make it: each renames its own into place, so a kept folder is whole.
func (c *Cluster) keptInitdb() (string, error) {
	sum := sha256.Sum256([]byte(c.bin + "\x00" + strings.Join(initdbArgs, " ") + "\x00" + strconv.Itoa(os.Geteuid())))
	dir := filepath.Join(os.TempDir(), "petstore-pgtest-initdb-"+hex.EncodeToString(sum[:6]))
	data := filepath.Join(dir, "data")
	if fileExists(filepath.Join(data, "PG_VERSION")) {
		return data, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "petstore-pgtest-initdb-new-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // after a rename, nothing is left there
	if err := giveToPostgres(tmp); err != nil {
		return "", err
	}
	if err := runAsPostgres(filepath.Join(c.bin, "initdb"), append(slices.Clone(initdbArgs), "-D", filepath.Join(tmp, "data"))...); err != nil {
		return "", fmt.Errorf("initdb: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !fileExists(filepath.Join(data, "PG_VERSION")) {
		return "", err
	}
	return data, nil
}
