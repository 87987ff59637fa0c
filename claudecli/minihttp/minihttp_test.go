package minihttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOptions: Admit refuses a request before its body is read (404, the
// handler never called), MaxBody bounds a body (413), a request that
// cannot be parsed is answered 400, and one admitted within bounds reaches
// the handler with its whole body.
func TestOptions(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var handled atomic.Int32
	s := Serve(ln, func(w *Response, r *http.Request, body []byte) {
		handled.Add(1)
		_, _ = w.Write(append([]byte(r.URL.Path+":"), body...))
	}, Options{Admit: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/ok/") }, MaxBody: 10})
	defer s.Close()
	url := "http://" + ln.Addr().String()
	post := func(path, body string) (int, string) {
		resp, err := http.Post(url+path, "text/plain", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/ok/a", "0123456789")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "/ok/a:0123456789", body)
	code, _ = post("/ok/a", "0123456789x")
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	code, _ = post("/no/a", "x")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, int32(1), handled.Load(), "only the admitted request within bounds reached the handler")

	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("NOT HTTP\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
