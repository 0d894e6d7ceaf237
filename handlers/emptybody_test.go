package handlers_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/store"
)

// TestEmptyChunkedBodyOnMethodsWithoutOne: some clients frame every
// request's body, an empty one too, as chunked ("0\r\n\r\n"). A GET, HEAD
// or DELETE so framed takes no body, so it is answered as without one, and
// its connection carries the next request; a body with content on them is
// still 400, and the connection closed.
func TestEmptyChunkedBodyOnMethodsWithoutOne(t *testing.T) {
	ts, _, pet := newServerWithRex(t, 0)
	var cats store.Category
	ts.do("POST", "/categories", `{"name":"cats"}`).wantStatus(201).decode(&cats)
	addr := productionServer(t, ts)
	ctx := context.Background()
	petPath := fmt.Sprintf("/pets/%d", pet.ID)
	want := ts.do("GET", petPath, "").wantStatus(200)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(conn)
	// exchange sends one request on conn and checks its answer as the
	// harness checks every answer.
	exchange := func(method, path, body string, status int) *http.Response {
		t.Helper()
		head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nX-API-Key: %s\r\nTransfer-Encoding: chunked\r\n\r\n", method, path, ts.apiKey)
		framed := "0\r\n\r\n"
		if body != "" {
			framed = fmt.Sprintf("%x\r\n%s\r\n", len(body), body) + framed
		}
		if _, err := io.WriteString(conn, head+framed); err != nil {
			t.Fatal(err)
		}
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head + framed)))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(rd, req)
		if err != nil {
			t.Fatalf("%s %s: reading the answer: %v", method, path, err)
		}
		got, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		reqBody, _ := io.ReadAll(req.Body)
		req.Body = http.NoBody
		r := &response{tb: t, status: res.StatusCode, header: res.Header, body: got}
		ts.validate(req, reqBody, r)
		if res.StatusCode != status {
			t.Fatalf("%s %s with a chunked body %q: %d, want %d: %s", method, path, body, res.StatusCode, status, got)
		}
		if status == 400 && !strings.Contains(r.wantError(400, "invalid_request").message(), "takes no request body") {
			t.Errorf("%s %s: message %q does not say why", method, path, r.message())
		}
		if path == petPath && method == "GET" && string(got) != string(want.body) {
			t.Errorf("GET %s: %s, want %s", path, got, want.body)
		}
		return res
	}
	// One connection carries them all: each empty body was read.
	exchange("GET", petPath, "", 200)
	exchange("HEAD", petPath, "", 200)
	exchange("GET", "/pets", "", 200)
	exchange("DELETE", fmt.Sprintf("/categories/%d", cats.ID), "", 204)
	if _, err := ts.db.Category(ctx, cats.ID); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("the category after DELETE: %v, want not found", err)
	}
	// A body with content on a DELETE is refused as before; nothing changes.
	res := exchange("DELETE", petPath, "{}", 400)
	if !res.Close {
		t.Error("a refused body left the connection open")
	}
	if _, err := ts.db.Pet(ctx, pet.ID); err != nil {
		t.Errorf("the pet after a refused DELETE: %v", err)
	}
}
