// Package minihttp serves HTTP/1.1 on a listener with net/http's request
// parser and types, without net/http's Server: that server (with its
// HTTP/2 and TLS paths) would link crypto/tls, x509 and more into the
// claude-rpc binary, and every bridge process would map them. The fake
// API (demo, doctor) and claudecli's relay serve through it.
package minihttp

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
	"sync"
	"time"
)

// Handler answers one request, whose whole body was read. The request's
// context ends when the client closes the connection while the answer is
// written, and when the server closes.
type Handler func(w *Response, r *http.Request, body []byte)

// Options are how a [Server] serves; the zero value serves every
// request, with no bound on its body.
type Options struct {
	// BadRequest, when set, answers a request that cannot be parsed, or
	// whose body is over MaxBody (else a plain 400 or 413).
	BadRequest func(w *Response, err error)
	// Admit, when set, is asked after a request's header was read and
	// before its body is: false answers 404 and closes the connection,
	// unread (a request that lacks what it needs to be served at all).
	Admit func(r *http.Request) bool
	// MaxBody, when positive, bounds a request's body.
	MaxBody int64
}

// Server serves one listener until Close.
type Server struct {
	ln     net.Listener
	handle Handler
	o      Options

	mu sync.Mutex
	// conns are the open connections, which Close closes.
	conns map[net.Conn]struct{}
	// done is closed when the server shuts down.
	done chan struct{}
	// wg counts the accept loop and the connections' goroutines.
	wg sync.WaitGroup
}

// Serve serves ln with h on goroutines of its own, as o says.
func Serve(ln net.Listener, h Handler, o Options) *Server {
	if o.BadRequest == nil {
		o.BadRequest = func(w *Response, err error) {
			status := http.StatusBadRequest
			if errors.Is(err, errTooLarge) {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, "malformed request: "+err.Error(), status)
		}
	}
	s := &Server{ln: ln, handle: h, o: o, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

// Close stops the server: it ends any reply still being written, closes
// every connection and returns once their goroutines are done.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	_ = s.ln.Close()
	for nc := range conns {
		_ = nc.Close()
	}
	s.wg.Wait()
}

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
		hr, body, err := s.readRequest(nc, br, bw)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				w := newResponse(bw, &http.Request{Method: http.MethodGet, Close: true})
				if errors.Is(err, errNotAdmitted) {
					http.NotFound(w, nil)
				} else {
					s.o.BadRequest(w, err)
				}
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

// errNotAdmitted is a request Options.Admit refused; errTooLarge one
// whose body is over Options.MaxBody.
var (
	errNotAdmitted = errors.New("not admitted")
	errTooLarge    = errors.New("the body is too large")
)

// readRequest reads one request and its whole body from br, the header
// within headerTimeout. It answers "Expect: 100-continue" on bw.
func (s *Server) readRequest(nc net.Conn, br *bufio.Reader, bw *bufio.Writer) (*http.Request, []byte, error) {
	_ = nc.SetReadDeadline(time.Now().Add(headerTimeout))
	hr, err := http.ReadRequest(br)
	_ = nc.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, nil, err
	}
	if s.o.Admit != nil && !s.o.Admit(hr) {
		return nil, nil, errNotAdmitted
	}
	if s.o.MaxBody > 0 {
		if hr.ContentLength > s.o.MaxBody {
			return nil, nil, errTooLarge
		}
		hr.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(hr.Body, s.o.MaxBody+1), hr.Body}
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
	if s.o.MaxBody > 0 && int64(len(body)) > s.o.MaxBody {
		return nil, nil, errTooLarge
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

// Response is the http.ResponseWriter and http.Flusher of one request.
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
type Response struct {
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

func newResponse(bw *bufio.Writer, req *http.Request) *Response {
	http11 := req.ProtoAtLeast(1, 1)
	return &Response{bw: bw, head: req.Method == http.MethodHead, http11: http11, header: http.Header{}, close: req.Close || !http11}
}

func (r *Response) Header() http.Header { return r.header }

// WriteHeader sets the status; only the first call counts.
func (r *Response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *Response) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.err != nil {
		return 0, r.err
	}
	r.buf = append(r.buf, p...)
	return len(p), nil
}

// Flush sends the header (if not yet sent) and what was written.
func (r *Response) Flush() {
	r.WriteHeader(http.StatusOK)
	if !r.sent {
		r.writeHeader(-1)
	}
	r.writeBody()
	if r.err == nil {
		r.err = r.bw.Flush()
	}
}

// Abort ends the connection without finishing the reply, as a network
// that drops.
func (r *Response) Abort() { r.aborted = true }

var errAborted = errors.New("minihttp: reply aborted")

// finish completes the reply after the handler returned. An error means the
// connection is to be closed.
func (r *Response) finish() error {
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
func (r *Response) bodyAllowed() bool {
	return !r.head && r.status >= 200 &&
		r.status != http.StatusNoContent && r.status != http.StatusNotModified
}

// writeHeader buffers the status line and header: with a Content-Length of
// n, or when n < 0 for a body of unknown length.
func (r *Response) writeHeader(n int) {
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
func (r *Response) writeBody() {
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
