package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// bulkDataFile writes a data file of tens of MB: far more than the socket
// buffers between the service and a client hold, so that a backup
// download whose client stops reading is still running.
func bulkDataFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.db")
	domaintest.WriteStoreFile(t, path, func(db *boltstore.DB) error {
		cat := &store.Category{Name: "bulk"}
		if err := db.CreateCategory(context.Background(), cat, nil); err != nil {
			return err
		}
		return db.ImportPets(context.Background(), cat.ID, 100_000, store.StatusAvailable)
	})
	return path
}

// startBackup starts GET /admin/backup on a connection with a small
// receive buffer and reads the answer's headers only: the download then
// waits for the client to read.
func startBackup(t *testing.T, base string) (net.Conn, *http.Response) {
	t.Helper()
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := dialer.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /admin/backup HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n\r\n", domaintest.AdminToken)
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.ContentLength < 8<<20 {
		t.Fatalf("backup: status %d, %d bytes; want 200 and over 8 MiB", res.StatusCode, res.ContentLength)
	}
	return conn, res
}

// TestShutdownTurnsReadinessOff: from the moment a shutdown begins, /readyz
// answers 503 on the connections a balancer keeps open (the listening
// socket is closed already), while a request in flight (a backup) still
// holds the process; before it, 200 on the same connection.
func TestShutdownTurnsReadinessOff(t *testing.T) {
	parallel(t)
	in := start(t, nil, "--admin-token", domaintest.AdminToken, "--data", bulkDataFile(t), "--shutdown-timeout", "30s")
	kept, err := net.Dial("tcp", strings.TrimPrefix(in.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	r := bufio.NewReader(kept)
	probe := func() (*http.Response, []byte) {
		t.Helper()
		fmt.Fprintf(kept, "GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("/readyz on the kept connection: %v", err)
		}
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}
	if res, body := probe(); res.StatusCode != http.StatusOK {
		t.Fatalf("/readyz before the shutdown: %d %s", res.StatusCode, body)
	}
	backup, _ := startBackup(t, in.base)

	in.cancel() // SIGTERM
	domaintest.WaitFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(in.out.String(), "shutting down: finishing in-flight requests") {
			return fmt.Errorf("the shutdown has not begun:\n%s", in.out)
		}
		return nil
	})
	res, body := probe()
	var e struct {
		Code   string
		Status int
	}
	if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != http.StatusServiceUnavailable || e.Status != res.StatusCode || e.Code != "unavailable" {
		t.Errorf("/readyz during the shutdown: %d %s; want 503 and an Error body", res.StatusCode, body)
	}
	if !res.Close {
		t.Errorf("/readyz during the shutdown did not close its connection")
	}
	backup.Close() // the download ends, and the shutdown with it
	in.stopWithin(t, 20*time.Second)
}

// TestUpgradeWithABackupInFlight: on a data file, a SIGHUP while a backup
// downloads leaves the old process serving reads and writes on new
// connections (the new one cannot open the file before the download's
// read transaction ends) until the download is complete; the new process
// then takes over.
func TestUpgradeWithABackupInFlight(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("builds the binary and runs it in child processes")
	}
	oldBuild, newBuild := buildService(t, upgradeOldVersion), buildService(t, upgradeNewVersion)
	svc := newUpgradeService(t, oldBuild)
	// --shutdown-timeout is far longer than the client below waits for an
	// answer: today's process stopped accepting at once, and new
	// connections waited in the backlog for the whole download.
	svc.start(t, exec.Command(svc.bin, svc.args(t, "--listen", "127.0.0.1:0", "--data", bulkDataFile(t), "--shutdown-timeout", "60s")...))
	c, catID, _ := seedPet(t, svc.base, "upgrade")
	backup, res := startBackup(t, svc.base)

	svc.replaceBinary(t, newBuild)
	svc.hangUp(t)
	if _, err := svc.waitOutput(60*time.Second, regexp.MustCompile(`(upgrade: the new process has the listening sockets)`)); err != nil {
		t.Fatalf("%v\n%s", err, svc.out)
	}
	if v := svc.version(t); v != upgradeOldVersion {
		t.Fatalf("during the backup /healthz reports %q, want the old process's %q", v, upgradeOldVersion)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var ids []string
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodPost, svc.base+"/pets", strings.NewReader(fmt.Sprintf(`{"name":"during-%d","categoryId":%d}`, i, catID)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", c.key)
		status, body, err := sendOnce(client, req)
		var pet struct{ ID int64 }
		if err != nil || status != http.StatusCreated || json.Unmarshal(body, &pet) != nil {
			t.Fatalf("POST /pets on a new connection during the backup: %d %s %v", status, body, err)
		}
		ids = append(ids, fmt.Sprint(pet.ID))
	}
	// The download, read to its end, is whole.
	n, err := io.Copy(io.Discard, res.Body)
	if err != nil || n != res.ContentLength {
		t.Errorf("the backup: %d of %d bytes, %v", n, res.ContentLength, err)
	}
	backup.Close()
	svc.waitReplaced(t)
	var pets []struct{ Name string }
	c.mustCall(http.MethodGet, "/pets?id="+strings.Join(ids, "&id="), "", http.StatusOK, &pets)
	if len(pets) != len(ids) {
		t.Errorf("the new process serves %d of the %d pets acknowledged during the backup: %v", len(pets), len(ids), pets)
	}
}

// TestShutdownRefusesNewConnections: once a SIGTERM's shutdown begins,
// while a request in flight still holds the process, a new connection is
// refused at once (a balancer then tries another instance), not left in
// the listening socket's backlog, which the upgrader kept open, until the
// process exits and resets it.
func TestShutdownRefusesNewConnections(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("builds the binary and runs it in a child process")
	}
	svc := newUpgradeService(t, buildService(t, upgradeOldVersion))
	svc.start(t, exec.Command(svc.bin, svc.args(t, "--listen", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "p.db"), "--shutdown-timeout", "60s")...))
	addr := strings.TrimPrefix(svc.base, "http://")
	// A request whose body never ends holds the shutdown.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /pets HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	domaintest.WaitFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if open := openConnections(t, svc.base); open < 2 {
			return fmt.Errorf("%d connections open, want the slow one and the scrape's", open)
		}
		return nil
	})

	if err := svc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.waitOutput(30*time.Second, regexp.MustCompile(`(shutting down: finishing in-flight requests)`)); err != nil {
		t.Fatalf("%v\n%s", err, svc.out)
	}
	domaintest.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return errors.New("a new connection was accepted by the listening socket during the shutdown")
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("a new connection during the shutdown: %v; want it refused", err)
		}
		return nil
	})
}

// openConnections reads petstore_connections_open from /metrics.
func openConnections(t *testing.T, base string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+domaintest.AdminToken)
	res, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`(?m)^petstore_connections_open (\d+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no petstore_connections_open in /metrics:\n%s", body)
	}
	n := 0
	fmt.Sscan(string(m[1]), &n)
	return n
}
