package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFirstStartOnABusyPortLosesNoToken: a first start on a port another
// program holds fails in one line that names the flag and another port to
// try, and leaves nothing behind; the next start, on a free port, prints
// the admin token, which then works.
func TestFirstStartOnABusyPortLosesNoToken(t *testing.T) {
	parallel(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(t.TempDir(), "petstore.db")

	for _, flag := range []string{"--listen", "--https-listen", "--http-listen"} {
		args := []string{"--listen", "127.0.0.1:0", "--rate-limit", "0", "--data", data}
		if flag == "--listen" {
			args[1] = busy.Addr().String()
		} else {
			args = append(args, flag, busy.Addr().String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out strings.Builder
		err := run(ctx, args, func(string) string { return "" }, &out)
		cancel()
		if err == nil {
			t.Fatalf("%s on a busy port: the start did not fail", flag)
		}
		msg := err.Error()
		_, port, _ := net.SplitHostPort(busy.Addr().String())
		if strings.Contains(msg, "\n") || !strings.Contains(msg, flag+" "+busy.Addr().String()) || !strings.Contains(msg, "in use") || !regexp.MustCompile(flag+` 127\.0\.0\.1:\d+ \(PETSTORE_`).MatchString(msg) || strings.Contains(msg, "127.0.0.1:"+port+" (") {
			t.Errorf("%s on a busy port: %q; want one line naming the flag and another port", flag, msg)
		}
		if strings.Contains(out.String(), "pat_") {
			t.Errorf("%s on a busy port printed a token:\n%s", flag, out.String())
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%s on a busy port left the data file behind (%v)", flag, err)
		}
	}

	in := start(t, nil, "--data", data)
	token := in.printedToken(t)
	if code, body := in.call(t, "GET", "/admin/project", "", "Authorization", "Bearer "+token); code != 200 {
		t.Errorf("the printed token: %d %s", code, body)
	}
	in.stop(t)

	// A start on a busy port once the file exists keeps it, token and all.
	err = run(context.Background(), []string{"--listen", busy.Addr().String(), "--data", data}, func(string) string { return "" }, io.Discard)
	if err == nil {
		t.Fatal("a start on a busy port did not fail")
	}
	again := start(t, nil, "--data", data)
	if strings.Contains(again.out.String(), "pat_") {
		t.Errorf("a later start printed a new token:\n%s", again.out)
	}
	if code, body := again.call(t, "GET", "/admin/project", "", "Authorization", "Bearer "+token); code != 200 {
		t.Errorf("the first token after a failed start: %d %s", code, body)
	}
}

// TestBusyPortMessageOfTheBinary: the real binary, which binds through
// the upgrader (run() in the tests does not), says a busy port in the
// words docs/operations.md shows, on its standard error, and nothing of
// the listener library's own wording.
func TestBusyPortMessageOfTheBinary(t *testing.T) {
	parallel(t) // a build: it overlaps the tests that wait
	if testing.Short() {
		t.Skip("builds the binary")
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	next, _ := strconv.Atoi(port)
	bin := buildService(t, upgradeOldVersion) // any build: the message is not the version's

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--listen", addr, "--data", filepath.Join(t.TempDir(), "petstore.db"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("a start on a busy port: %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	want := fmt.Sprintf("petstore: --listen %s: the address is in use by another program (another petstore?); stop it, or start with another port, e.g. --listen 127.0.0.1:%d (PETSTORE_LISTEN)\n", addr, next+1)
	if stderr.String() != want {
		t.Errorf("a start on a busy port printed on stderr:\n%q\nwant:\n%q", stderr.String(), want)
	}
	doc, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := strings.NewReplacer(addr, "localhost:8080", fmt.Sprintf("127.0.0.1:%d", next+1), "localhost:8081").Replace(want)
	if !strings.Contains(string(doc), "\n"+documented) {
		t.Errorf("docs/operations.md does not show the message as the binary prints it:\n%s", documented)
	}
}
