package fakeapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fake API serves HTTP/1.1 itself rather than through net/http's
// Server: that server (with its HTTP/2 and TLS paths) would link crypto/tls,
// x509 and more into the claude-rpc binary, which serves the fake API for
// `demo` and `doctor`, and every bridge process would map them. What it
// takes from net/http is the request parser (http.ReadRequest) and types.

// headerTimeout bounds the reading of a request's header once its first
// byte came; an idle keep-alive connection waits until the client or
// [Server.Close] ends it.
const headerTimeout = 10 * time.Second

// acceptLoop serves each connection s.ln accepts on a goroutine of its own
// until Close closes the listener.
func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors: try again
			continue
		}
		if !s.track(nc) {
			_ = nc.Close()
			return
		}
		s.wg.Add(1)
		go s.serveConn(nc)
	}
}

// track adds nc to the open connections that Close closes; false when the
// server is closed already.
func (s *Server) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return false
	default:
	}
	s.conns[nc] = struct{}{}
	return true
}

func (s *Server) untrack(nc net.Conn) {
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
	_ = nc.Close()
}

// serveConn reads requests from nc and answers each in turn (HTTP/1.1
// keep-alive) until the client closes it or asks to, a request cannot be
// parsed (answered 400), a reply is aborted or the server closes (which
// leaves the reply in progress unfinished).
func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	defer s.untrack(nc)
	cr := &connReader{nc: nc}
	br := bufio.NewReader(cr)
	bw := bufio.NewWriter(nc)
	for {
		if _, err := br.Peek(1); err != nil {
			return // closed while idle
		}
		hr, body, err := readRequest(nc, br, bw)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				w := newResponse(bw, &http.Request{Method: http.MethodGet, Close: true})
				writeError(w, http.StatusBadRequest, "invalid_request_error", "fake API: malformed request: "+err.Error())
				_ = w.finish()
			}
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := newResponse(bw, hr)
		stop := func() (gone bool) { return false }
		if br.Buffered() == 0 { // else the client sent its next request already
			stop = cr.watch(func() {
				select {
				case <-s.done: // Close cut the connection: not the client
				default:
					cancel()
				}
			})
		}
		s.handle(w, hr.WithContext(ctx), body)
		gone := stop()
		cancel()
		select {
		case <-s.done:
			return // a reply Close ended is cut, not finished
		default:
		}
		if err := w.finish(); err != nil || w.close || gone {
			return
		}
	}
}

// readRequest reads one request and its whole body from br, the header
// within headerTimeout. It answers "Expect: 100-continue" on bw.
func readRequest(nc net.Conn, br *bufio.Reader, bw *bufio.Writer) (*http.Request, []byte, error) {
	_ = nc.SetReadDeadline(time.Now().Add(headerTimeout))
	hr, err := http.ReadRequest(br)
	_ = nc.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, nil, err
	}
	if hr.ProtoAtLeast(1, 1) && hr.ContentLength != 0 && strings.EqualFold(hr.Header.Get("Expect"), "100-continue") {
		_, _ = bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := bw.Flush(); err != nil {
			return nil, nil, err
		}
	}
	body, err := io.ReadAll(hr.Body) // Content-Length or chunked, as the header says
	if err != nil {
		return nil, nil, err
	}
	return hr, body, nil
}

// connReader is the connection as the request parser reads it: a byte
// that [connReader.watch] read ahead comes first.
type connReader struct {
	nc    net.Conn
	ahead []byte
}

func (c *connReader) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		return n, nil
	}
	return c.nc.Read(p)
}

// watch reads from the connection while a reply is written, so that gone is
// called as soon as the client closes its side (the request's context
// ends, as net/http's does). stop ends the read and reports whether the
// client went; a byte read meanwhile (the client's next request) is kept
// for the parser.
func (c *connReader) watch(gone func()) (stop func() bool) {
	var b [1]byte
	var n int
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err = c.nc.Read(b[:])
		if n == 0 && err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			gone()
		}
	}()
	return func() bool {
		_ = c.nc.SetReadDeadline(time.Unix(1, 0)) // ends the read at once
		<-done
		_ = c.nc.SetReadDeadline(time.Time{})
		if n > 0 {
			c.ahead = append(c.ahead[:0], b[:n]...)
		}
		return n == 0 && err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	}
}

// response is the http.ResponseWriter and http.Flusher of one request.
// Written bytes are buffered: a reply that ends unflushed goes out with a
// Content-Length; the first Flush sends the header with
// "Transfer-Encoding: chunked" (HTTP/1.1; else the body ends with the
// connection) and each Flush then sends what was written as one chunk, at
// once. Content-Length, Transfer-Encoding and Connection are its own to
// set, not the handler's.
//
// It keeps no *http.Request: a response is used as an interface, and the
// request's TLS field would then keep crypto/tls's and x509's methods in
// the binary.
type response struct {
	bw *bufio.Writer
	// head and http11 describe the request: HEAD (no body on the wire),
	// HTTP/1.1 or later (chunked encoding).
	head, http11 bool
	header       http.Header
	status       int // 0 until WriteHeader
	sent         bool
	// chunked is set once the header went out with chunked encoding.
	chunked bool
	buf     []byte // written, not sent
	err     error  // the first failure to send: the connection is broken
	// close ends the connection after this reply; aborted ends it now,
	// the reply unfinished.
	close, aborted bool
}

func newResponse(bw *bufio.Writer, req *http.Request) *response {
	http11 := req.ProtoAtLeast(1, 1)
	return &response{bw: bw, head: req.Method == http.MethodHead, http11: http11, header: http.Header{}, close: req.Close || !http11}
}

func (r *response) Header() http.Header { return r.header }

// WriteHeader sets the status; only the first call counts.
func (r *response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *response) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.err != nil {
		return 0, r.err
	}
	r.buf = append(r.buf, p...)
	return len(p), nil
}

// Flush sends the header (if not yet sent) and what was written.
func (r *response) Flush() {
	r.WriteHeader(http.StatusOK)
	if !r.sent {
		r.writeHeader(-1)
	}
	r.writeBody()
	if r.err == nil {
		r.err = r.bw.Flush()
	}
}

// abort ends the connection without finishing the reply, as a network
// that drops.
func (r *response) abort() { r.aborted = true }

var errAborted = errors.New("fake API: reply aborted")

// finish completes the reply after the handler returned. An error means the
// connection is to be closed.
func (r *response) finish() error {
	if r.aborted {
		return errAborted
	}
	r.WriteHeader(http.StatusOK)
	if !r.sent {
		r.writeHeader(len(r.buf))
	}
	r.writeBody()
	if r.chunked {
		_, _ = r.bw.WriteString("0\r\n\r\n")
	}
	if r.err == nil {
		r.err = r.bw.Flush()
	}
	return r.err
}

// bodyAllowed reports whether the reply carries a body on the wire.
func (r *response) bodyAllowed() bool {
	return !r.head && r.status >= 200 &&
		r.status != http.StatusNoContent && r.status != http.StatusNotModified
}

// writeHeader buffers the status line and header: with a Content-Length of
// n, or when n < 0 for a body of unknown length.
func (r *response) writeHeader(n int) {
	r.sent = true
	text := http.StatusText(r.status)
	if text == "" {
		text = "status code " + strconv.Itoa(r.status)
	}
	bw := r.bw
	_, _ = bw.WriteString("HTTP/1.1 " + strconv.Itoa(r.status) + " " + text + "\r\n")
	h := r.header
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	h.Del("Connection")
	if h.Get("Date") == "" {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	switch {
	case r.status < 200 || r.status == http.StatusNoContent || r.status == http.StatusNotModified:
	case n >= 0:
		h.Set("Content-Length", strconv.Itoa(n))
	case r.http11:
		h.Set("Transfer-Encoding", "chunked")
		r.chunked = true
	default:
		r.close = true // the body ends with the connection
	}
	if r.close {
		h.Set("Connection", "close")
	}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			_, _ = bw.WriteString(k + ": " + headerValueReplacer.Replace(v) + "\r\n")
		}
	}
	_, _ = bw.WriteString("\r\n")
}

// headerValueReplacer keeps a header value on its line. (http.Header.Write
// would too, with a sort of its own that costs the binary 25 KB.)
var headerValueReplacer = strings.NewReplacer("\r", " ", "\n", " ")

// writeBody buffers what was written for sending, as a chunk when chunked.
func (r *response) writeBody() {
	if len(r.buf) == 0 || !r.bodyAllowed() {
		r.buf = r.buf[:0]
		return
	}
	if r.chunked {
		_, _ = r.bw.WriteString(strconv.FormatInt(int64(len(r.buf)), 16) + "\r\n")
	}
	_, _ = r.bw.Write(r.buf)
	if r.chunked {
		_, _ = r.bw.WriteString("\r\n")
	}
	r.buf = r.buf[:0]
}
