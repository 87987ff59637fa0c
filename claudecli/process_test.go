package claudecli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnviron(t *testing.T) {
	c := Config{Env: []string{"A=1", "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "B=2"}}
	want := []string{"A=1", "B=2", "CLAUDE_CODE_ENTRYPOINT=" + entrypoint}
	if runtime.GOOS == "windows" { // and the Git Bash found (TestEnvironGitBash)
		if bash, err := Local(c.Env).FindGitBash(); err == nil {
			want = append(want, GitBashEnv+"="+bash)
		}
	}
	assert.Equal(t, want, c.Environ())
}

func TestTurnArgs(t *testing.T) {
	c := Config{Model: "sonnet", PermissionMode: "plan", ExtraArgs: []string{"--x"}}
	assert.Equal(t, []string{"-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json",
		"--include-partial-messages", "--model", "sonnet", "--permission-mode", "plan", "--resume=abc", "--x"},
		c.TurnArgs(Session{ID: "abc", Exists: true}))
	for _, tt := range []struct {
		cfg  Config
		s    Session
		want []string
	}{
		{Config{}, Session{ID: "abc"}, []string{"--session-id=abc"}},
		{Config{}, Session{}, []string{}},
		{Config{}, Session{ID: "abc", Exists: true, Name: "-My work"}, []string{"--resume=abc", "--name=-My work"}},
		{Config{}, Session{ID: "new", ForkFrom: "old", ResumeAt: "u1"}, []string{"--resume=old", "--resume-session-at=u1", "--fork-session", "--session-id=new"}},
		{Config{}, Session{ID: "new", ForkFrom: "old"}, []string{"--resume=old", "--fork-session", "--session-id=new"}},
		{Config{}, Session{ID: "new", Exists: true, ForkFrom: "old"}, []string{"--resume=new"}},
		{Config{NoPersistence: true, Effort: "high"}, Session{ID: "abc"}, []string{"--effort", "high", "--session-id=abc", "--no-session-persistence"}},
		{Config{FastMode: true}, Session{}, []string{"--settings", `{"fastMode":true}`}},
		// One --settings: the CLI keeps only the last one it is given.
		{Config{FastMode: true, Settings: map[string]any{"disableBundledSkills": true}}, Session{},
			[]string{"--settings", `{"disableBundledSkills":true,"fastMode":true}`}},
		{Config{Settings: map[string]any{"skillOverrides": map[string]any{"x": "off"}}}, Session{},
			[]string{"--settings", `{"skillOverrides":{"x":"off"}}`}},
	} {
		assert.Equal(t, tt.want, tt.cfg.TurnArgs(tt.s)[7:], "%+v", tt.s)
	}
}

func TestUserLine(t *testing.T) {
	assert.Equal(t, `{"type":"user","message":{"role":"user","content":"hi \"<there>\""},"session_id":"default","parent_tool_use_id":null}`+"\n",
		string(UserLine(`hi "<there>"`, nil)))
	assert.Equal(t, `{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA="}},{"type":"text","text":"look"}]},"session_id":"default","parent_tool_use_id":null}`+"\n",
		string(UserLine("look", []Image{{Data: "AAA=", MimeType: "image/png"}})))
}

func TestTailBuffer(t *testing.T) {
	tb := NewTail(5)
	_, _ = tb.Write([]byte("abc"))
	_, _ = tb.Write([]byte("defg"))
	assert.Equal(t, "cdefg", tb.String())
	_, _ = tb.Write([]byte("0123456789"))
	assert.Equal(t, "56789", tb.String())
}

// TestFind is discovery on this machine, with the bridge's environment.
func TestFind(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent", "claude")
	_, err := Find(missing)
	assert.ErrorIs(t, err, errNotFound)
	assert.Contains(t, err.Error(), strconv.Quote(missing))

	dir := t.TempDir()
	exe := filepath.Join(dir, "claude"+exeSuffix)
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	got, err := Find(exe)
	require.NoError(t, err)
	assert.Equal(t, Command{Path: exe, From: "--claude-path"}, got)

	t.Chdir(dir)
	got, err = Find("./claude")
	require.NoError(t, err)
	assert.Equal(t, exe, got.Path, "a relative path is made absolute: the CLI runs in another folder")

	t.Setenv("PATH", dir)
	got, err = Find("")
	require.NoError(t, err)
	assert.Equal(t, Command{Path: exe, From: "PATH"}, got)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	_, err = Find("")
	assert.ErrorIs(t, err, errNotFound)
	assert.Contains(t, err.Error(), "npm install -g @anthropic-ai/claude-code")
}

// script writes a shell script standing in for the CLI (Unix only; see
// fake for what runs everywhere).
func script(t *testing.T, body string) Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return Config{Path: p, Env: []string{"PATH=" + os.Getenv("PATH")}}
}

func TestStartTurnRelaysStdinToStdout(t *testing.T) {
	p, err := startTurn(fake(t, "relay"), Session{}, []byte("line\n"))
	require.NoError(t, err)
	out, err := io.ReadAll(p.Stdout())
	require.NoError(t, err)
	assert.Equal(t, "line\ndone\n", string(out))
	<-p.Done()
	assert.NoError(t, p.Err())
	assert.Equal(t, "exit status 0", p.Exit().Error())
}

func TestExitHasStderrTail(t *testing.T) {
	p, err := startTurn(fake(t, "fail"), Session{}, nil)
	require.NoError(t, err)
	_, _ = io.ReadAll(p.Stdout())
	<-p.Done()
	assert.Equal(t, "exit status 4; stderr: oops", p.Exit().Error())
}

// TestStopKillsTheGroup starts a "CLI" that ignores SIGTERM and leaves a
// grandchild holding stdout; Stop must end both and stdout must reach EOF.
func TestStopKillsTheGroup(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM and process groups are Unix's; on Windows the Job Object ends the tree (TestStopEndsTheJob)")
	}
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 200 * time.Millisecond
	p, err := startTurn(script(t, "trap '' TERM; sleep 60 & echo started; wait\n"), Session{}, nil)
	require.NoError(t, err)
	buf := make([]byte, 8)
	n, _ := p.Stdout().Read(buf)
	require.Equal(t, "started\n", string(buf[:n]))
	start := time.Now()
	p.Stop()
	_, err = io.ReadAll(p.Stdout())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Contains(t, p.Exit().Error(), "killed")
	p.Stop() // again: a no-op
}

func TestStartTurnMissingBinary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent", "claude")
	_, err := startTurn(Config{Path: missing}, Session{}, nil)
	assert.True(t, errors.Is(err, errNotFound), "%v", err)
	assert.True(t, strings.Contains(err.Error(), strconv.Quote(missing)), "%v", err)
}

func TestSpool(t *testing.T) {
	s := newSpool(iotest.HalfReader(strings.NewReader(strings.Repeat("0123456789", 100_000))), true)
	out, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(s, 10)))
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(out))
	rest, err := io.ReadAll(s)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("0123456789", 100_000)[10:], string(rest))
	_, err = s.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)
}

// fakeClock is a spool's clock that moves only when told: by a read
// (floodReader) or by a pause, which it counts.
type fakeClock struct {
	t      time.Time
	paused int
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(d time.Duration) {
	c.paused++
	c.t = c.t.Add(d)
}

// floodReader returns size bytes a read, n reads, each taking no time on
// the clock but the reads listed in slow, which take burstWait.
type floodReader struct {
	clock   *fakeClock
	size, n int
	slow    map[int]bool // 1-based read numbers
	reads   int
}

func (r *floodReader) Read(p []byte) (int, error) {
	if r.reads == r.n {
		return 0, io.EOF
	}
	r.reads++
	if r.slow[r.reads] {
		r.clock.t = r.clock.t.Add(burstWait)
	}
	return copy(p, bytes.Repeat([]byte("x"), min(r.size, len(p)))), nil
}

// TestSpoolBatchesAFlood: once burstReads reads in a row found data at
// once, the spool pauses after each small read so that the next takes
// what came meanwhile; on a terminal it does not, nor after a read that
// filled half its buffer, and a read that waited starts the count again.
func TestSpoolBatchesAFlood(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		batch  bool
		slow   []int
		paused int
	}{
		{"pipe, small reads: a pause after each from the 4th", 300, true, nil, 20 - burstReads + 1},
		{"terminal: never", 300, false, nil, 0},
		{"half a buffer read: the next at once", spoolChunk / 2, true, nil, 0},
		{"a read that waited: counted again from it", 300, true, []int{10}, 6 + 7},
		{"every read waited: never", 300, true, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(0, 0)}
			r := &floodReader{clock: clock, size: tc.size, n: 20, slow: map[int]bool{}}
			for _, k := range tc.slow {
				r.slow[k] = true
			}
			s := startSpool(&spool{batch: tc.batch, now: clock.now, sleep: clock.sleep}, r)
			out, err := io.ReadAll(s)
			require.NoError(t, err)
			assert.Len(t, out, 20*tc.size)
			assert.Equal(t, tc.paused, clock.paused)
		})
	}
}

// TestSpoolSmallReads: output read a line at a time is kept in full chunks,
// not a buffer per read.
func TestSpoolSmallReads(t *testing.T) {
	var s spool
	line := []byte(strings.Repeat("x", 299) + "\n")
	for range 1000 {
		s.push(line)
	}
	held := 0
	for _, c := range s.chunks {
		held += cap(c)
	}
	assert.Equal(t, 300_000, s.size)
	assert.LessOrEqual(t, held, 300_000+spoolChunk)
}

// TestSlowReaderLosesNothing: the process writes and exits while nobody
// reads; everything is still there afterwards.
func TestSlowReaderLosesNothing(t *testing.T) {
	p, err := startTurn(fake(t, "flood"), Session{}, nil)
	require.NoError(t, err)
	<-p.Done()
	time.Sleep(3 * stdoutGrace / 2) // past the grace for a stuck pipe
	out, err := io.ReadAll(p.Stdout())
	require.NoError(t, err)
	assert.Equal(t, 3_000_000+5, len(out))
	assert.True(t, strings.HasSuffix(string(out), "\nend\n"))
}

// TestPerTurnTakesOverlappingCallsInOrder: a Turn called while another is
// still starting (a run aborted as its turn started, then the next prompt)
// starts no process until the first call returned and its process ended,
// so two processes never resume the session at once.
func TestPerTurnTakesOverlappingCallsInOrder(t *testing.T) {
	starting, release, secondStarts := make(chan struct{}), make(chan struct{}), make(chan bool, 1)
	var first atomic.Pointer[cliProcess]
	tr := &perTurn{cfg: fake(t, "relay"), name: TransportPipe, start: func(c Config, s Session, in []byte) (*cliProcess, error) {
		if string(in) == "first\n" {
			close(starting)
			<-release
			p, err := startTurn(c, s, in)
			first.Store(p)
			return p, err
		}
		ended := false
		if p := first.Load(); p != nil {
			select {
			case <-p.Done():
				ended = true
			default:
			}
		}
		secondStarts <- ended
		return startTurn(c, s, in)
	}}
	turns := make(chan Turn, 2)
	turn := func(in string) {
		got, err := tr.Turn(Session{}, []byte(in+"\n"))
		assert.NoError(t, err)
		turns <- got
	}
	go turn("first")
	<-starting
	go turn("second")
	select {
	case <-secondStarts:
		t.Fatal("the second call started its process while the first was starting")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	for range 2 {
		got := <-turns
		for {
			if _, err := got.Next(); err != nil {
				break
			}
		}
	}
	assert.True(t, <-secondStarts, "the first turn's process had ended")
}

// countingReader counts the bytes read from it, of size in all.
type countingReader struct {
	n    atomic.Int64
	size int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	k := min(int64(len(p)), r.size-r.n.Load())
	if k == 0 {
		return 0, io.EOF
	}
	r.n.Add(k)
	return int(k), nil
}

// TestSpoolLimit: a limited spool (a persistent process's) reads no further
// ahead of its reader than its limit and a read, and goes on as it is
// read; an unlimited one reads up to spoolCap.
func TestSpoolLimit(t *testing.T) {
	const wait = 10 * time.Second
	r := &countingReader{size: 4 * streamSpool}
	s := newSpool(r, false)
	s.limitTo(streamSpool)
	ahead := func() int64 { return r.n.Load() }
	require.Eventually(t, func() bool { return ahead() >= streamSpool }, wait, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // fill waits: no more is read
	assert.LessOrEqual(t, ahead(), int64(streamSpool+spoolChunk))
	_, err := io.ReadFull(s, make([]byte, streamSpool))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ahead() >= 2*streamSpool }, wait, time.Millisecond, "reading on once read")
	time.Sleep(20 * time.Millisecond)
	assert.LessOrEqual(t, ahead(), int64(2*streamSpool+2*spoolChunk))
	rest, err := io.ReadAll(s)
	require.NoError(t, err)
	assert.Len(t, rest, 3*streamSpool)

	unlimited := &countingReader{size: spoolCap + 4*spoolChunk}
	s = newSpool(unlimited, false)
	require.Eventually(t, func() bool { return unlimited.n.Load() >= spoolCap }, wait, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	assert.LessOrEqual(t, unlimited.n.Load(), int64(spoolCap+spoolChunk))
	_, err = io.Copy(io.Discard, s)
	require.NoError(t, err)
}
