package domaintest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"
)

// Exchange writes a raw request on c and reads one answer within 10
// seconds: its status and body, or status 0 when c was closed (or the
// time ran out) without an answer.
func Exchange(c net.Conn, raw string) (status int, body string) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return 0, ""
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
