// Package pgtest starts a private PostgreSQL cluster for tests: Debian's
// postgresql binaries, initdb into a temporary folder, a server on a free
// loopback port, and a fresh database for each test. Nothing outside the
// folder is touched, and the server stops when the test binary ends
// (Stop, from TestMain).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstallHint says how to get the binaries.
const InstallHint = "install PostgreSQL's server (apt-get install -y postgresql); the tests look for initdb and pg_ctl in /usr/lib/postgresql/*/bin or on PATH"

var cluster struct {
	once    sync.Once
	dir     string // the temporary folder: data and socket
	bin     string // where initdb and pg_ctl are
	port    int
	err     error
	missing bool
	dbs     atomic.Int64
}

// URL returns the URL of a new, empty database on the shared private
// cluster, starting the cluster first if this is the first call. Without
// PostgreSQL's binaries the test is skipped with an install hint, or fails
// where CI is set (CI installs them).
func URL(tb testing.TB) string {
	tb.Helper()
	cluster.once.Do(start)
	if cluster.missing {
		if os.Getenv("CI") != "" {
			tb.Fatalf("PostgreSQL is not installed, so the PostgreSQL tests cannot run: %s", InstallHint)
		}
		tb.Skipf("PostgreSQL is not installed: %s", InstallHint)
	}
	if cluster.err != nil {
		tb.Fatalf("starting a private PostgreSQL cluster: %v", cluster.err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), cluster.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL("postgres"))
	if err != nil {
		tb.Fatalf("connecting to the private cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("creating database %s: %v", name, err)
	}
	return dbURL(name)
}

func dbURL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", cluster.port, name)
}

// Stop stops the cluster, if one was started, and removes its folder.
func Stop() {
	if cluster.dir == "" {
		return
	}
	if cluster.err == nil {
		_ = runAsPostgres(filepath.Join(cluster.bin, "pg_ctl"), "-D", filepath.Join(cluster.dir, "data"), "-m", "immediate", "-w", "stop")
	}
	_ = os.RemoveAll(cluster.dir)
}

func start() {
	cluster.bin = findBin()
	if cluster.bin == "" {
		cluster.missing = true
		return
	}
	cluster.err = startCluster()
}

func findBin() string {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "initdb")); err == nil {
			return filepath.Dir(p)
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return ""
	}
	return filepath.Dir(matches[len(matches)-1])
}

func startCluster() error {
	dir, err := os.MkdirTemp("", "petstore-pg-")
	if err != nil {
		return err
	}
	cluster.dir = dir
	if err := giveToPostgres(dir); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	if err := runAsPostgres(filepath.Join(cluster.bin, "initdb"), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "-D", data); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	// A taken port fails the start; try a few.
	for range 5 {
		if cluster.port, err = freePort(); err != nil {
			return err
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300",
			cluster.port, dir)
		if err = runAsPostgres(filepath.Join(cluster.bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err == nil {
			return nil
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	return fmt.Errorf("pg_ctl start: %w\n%s", err, log)
}

// PostgreSQL refuses to run as root: when the tests run as root (CI), the
// cluster belongs to the postgres user.
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
