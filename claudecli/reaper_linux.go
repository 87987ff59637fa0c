package claudecli

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// reaper is the owner of the bridge's orphans: the processes its children
// started whose parent ended, re-parented to the bridge because it is a
// child subreaper. It tells them from the bridge's own children (which
// os/exec waits for) by a registry of those, and attributes each orphan to
// the child it descends from by the [ownerEnv] in its environment.
type reaper struct {
	self, pgid int
	log        *slog.Logger
	seq        atomic.Int64

	// startMu is held for reading while a child is started and
	// registered, and for writing by a sweep: a sweep never sees a child
	// of the bridge that is not registered yet.
	startMu sync.RWMutex

	mu     sync.Mutex         // guards own, keep and killed
	own    map[int]ownedChild // the children os/exec owns (waits for), by pid: never touched
	keep   map[string]bool    // owner tokens whose orphans run on: live children's, KeepOrphans ones
	killed map[int]bool       // orphans SIGKILLed and not reaped yet
}

// ownedChild is a child of the bridge's own: its owner token and what
// becomes of its orphans.
type ownedChild struct {
	token   string
	orphans Orphans
}

// theReaper is set once by EnableReaper.
var theReaper atomic.Pointer[reaper]

// EnableReaper makes the bridge a child subreaper (Linux's
// PR_SET_CHILD_SUBREAPER): what a CLI process leaves when it ends, however
// it ends, is re-parented to the bridge, which ends it (SIGKILL, its process
// group too) and reaps it. Call it once, before starting any child; from
// then on every child must be started by a [Transport] or [RunCommand].
func EnableReaper(log *slog.Logger) error {
	if theReaper.Load() != nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	r := &reaper{self: os.Getpid(), pgid: unix.Getpgrp(), log: log,
		own: map[int]ownedChild{}, keep: map[string]bool{}, killed: map[int]bool{}}
	for _, c := range r.children(true) {
		r.own[c.pid] = ownedChild{orphans: KeepOrphans} // started before: someone else's to wait for
	}
	theReaper.Store(r)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGCHLD)
	go func() {
		for range sigs {
			r.sweep(false)
		}
	}()
	return nil
}

func startChild(cmd *exec.Cmd, orphans Orphans) (string, error) {
	r := theReaper.Load()
	if r == nil {
		return "", cmd.Start()
	}
	token := strconv.Itoa(r.self) + "." + strconv.FormatInt(r.seq.Add(1), 10)
	if orphans == KeepOrphans {
		token += keepSuffix
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(slices.Clip(cmd.Env), ownerEnv+"="+token)
	r.startMu.RLock()
	defer r.startMu.RUnlock()
	r.mu.Lock()
	r.keep[token] = true
	r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		r.mu.Lock()
		delete(r.keep, token)
		r.mu.Unlock()
		return "", err
	}
	r.mu.Lock()
	r.own[cmd.Process.Pid] = ownedChild{token: token, orphans: orphans}
	r.mu.Unlock()
	if orphans == EndOrphans {
		r.watch(cmd.Process.Pid, token) // not waited for yet: the pid is still its
	}
	return token, nil
}

// watch ends what the child pid leaves as soon as it exits, before its Wait
// returns: os/exec's Wait also waits until the child's output pipes close,
// which an orphan holding them would keep from happening. It waits on a
// pidfd of its own with WNOWAIT, so os/exec still collects the exit status.
// Without them (Linux before 5.4) orphans are ended when a sweep finds the
// child a zombie, and when its Wait returns (a CLI process's Wait waits for
// no pipe).
func (r *reaper) watch(pid int, token string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	go func() {
		defer unix.Close(fd)
		var info unix.Siginfo
		for {
			// It returns when the child exits, or with ECHILD once
			// os/exec has collected it: either way it ended. Another
			// error (Linux 5.3 has pidfds but no P_PIDFD) says nothing.
			err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil && err != unix.ECHILD {
				return
			}
			break
		}
		r.mu.Lock()
		delete(r.keep, token)
		r.mu.Unlock()
		r.settle(orphanSettle)
	}()
}

// childEnded is called when cmd's Wait has returned: its pid is no longer
// the bridge's to leave alone and, for EndOrphans, what it left is ended
// before this returns (up to orphanSettle). A sweep may have ended them
// already: one that finds the child exited (a zombie, not yet waited for)
// ends its orphans then, so that one holding the child's output pipe does
// not keep its Wait from returning.
func childEnded(cmd *exec.Cmd, token string, orphans Orphans) {
	r := theReaper.Load()
	if r == nil || token == "" {
		return
	}
	r.mu.Lock()
	delete(r.own, cmd.Process.Pid)
	if orphans == EndOrphans {
		delete(r.keep, token)
	}
	r.mu.Unlock()
	if orphans == EndOrphans {
		r.settle(orphanSettle)
	}
}

func settleOrphans(d time.Duration) {
	if r := theReaper.Load(); r != nil {
		r.settle(d)
	}
}

// settle sweeps until no orphan to end is alive, for at most d. The last
// sweep reads every process: the kernel's lists of a thread's children can
// miss one that moved while they were read.
func (r *reaper) settle(d time.Duration) {
	deadline := time.Now().Add(d)
	for full := false; ; {
		if r.sweep(full) == 0 {
			if full {
				return
			}
			full = true
			continue
		}
		full = false
		if !time.Now().Before(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweep reaps the orphans that have exited and SIGKILLs the live ones no
// live child keeps, with their process group; it returns how many of those
// it found. The children they leave in turn come to the bridge, for the
// next sweep.
func (r *reaper) sweep(full bool) int {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	ending := 0
	children := r.children(full)
	r.mu.Lock()
	for _, c := range children {
		if o, ok := r.own[c.pid]; ok && c.state == 'Z' && o.orphans == EndOrphans {
			delete(r.keep, o.token) // it exited: what it left is no longer its
		}
	}
	r.mu.Unlock()
	for _, c := range children {
		r.mu.Lock()
		_, own := r.own[c.pid]
		killed := r.killed[c.pid]
		r.mu.Unlock()
		switch {
		case own:
		case c.state == 'Z':
			var ws unix.WaitStatus
			if pid, _ := unix.Wait4(c.pid, &ws, unix.WNOHANG, nil); pid == c.pid { // an orphan's: only the reaper waits for it
				r.mu.Lock()
				delete(r.killed, c.pid)
				r.mu.Unlock()
			} else if killed {
				ending++
			}
		case killed:
			ending++ // dying (its environment may read empty by now)
		case !r.ended(c.pid):
			// A live child's, a KeepOrphans child's, or one no child of
			// this bridge's owns: it runs on, and is reaped when it exits.
		default:
			ending++
			r.log.Debug("ending an orphan of an ended child", "pid", c.pid, "pgid", c.pgid, "cmdline", cmdline(c.pid))
			// Its group, unless it is the bridge's own (a CLI on the
			// pipe transport is a group leader; its children share it).
			if c.pgid > 1 && c.pgid != r.pgid {
				_ = unix.Kill(-c.pgid, unix.SIGKILL)
			}
			_ = unix.Kill(c.pid, unix.SIGKILL)
			r.mu.Lock()
			r.killed[c.pid] = true
			r.mu.Unlock()
		}
	}
	return ending
}

// ended tells whether the orphan pid descends from a child of this bridge's
// that has ended, and is not a KeepOrphans one.
func (r *reaper) ended(pid int) bool {
	token := ownerToken(strconv.Itoa(pid))
	if !strings.HasPrefix(token, strconv.Itoa(r.self)+".") {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.keep[token]
}

// ownerToken returns the [ownerEnv] in the environment process pid started
// with: "" when it has none or it cannot be read (a zombie, another user's).
func ownerToken(pid string) string {
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		return ""
	}
	token := ""
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(ownerEnv+"=")); ok {
			token = string(v) // the last one is what a getenv sees
		}
	}
	return token
}

// procStat is what a sweep reads of a process in /proc/<pid>/stat.
type procStat struct {
	pid, pgid int
	state     byte
}

// children lists the bridge's child processes (its threads' children,
// orphans re-parented to it included): unless full, from each thread's
// /proc/self/task/<tid>/children when the kernel has them
// (CONFIG_PROC_CHILDREN), else from every process's stat.
func (r *reaper) children(full bool) []procStat {
	var pids []string
	ok := false
	if !full {
		pids, ok = r.childPids()
	}
	if !ok {
		d, err := os.Open("/proc")
		if err != nil {
			return nil
		}
		pids, _ = d.Readdirnames(-1)
		_ = d.Close()
	}
	var out []procStat
	for _, name := range pids {
		if c, ok := r.child(name); ok {
			out = append(out, c)
		}
	}
	return out
}

// childPids reads the pids the kernel lists as the children of the
// bridge's threads; ok is false where it lists none.
func (r *reaper) childPids() (pids []string, ok bool) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return nil, false
	}
	tids, _ := d.Readdirnames(-1)
	_ = d.Close()
	seen := map[string]bool{}
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/self/task/" + tid + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				if _, err := os.Stat("/proc/self/task/" + tid); err == nil {
					return nil, false // a kernel without the file
				}
			}
			continue // a thread that just ended
		}
		for _, f := range strings.Fields(string(b)) {
			if !seen[f] {
				seen[f] = true
				pids = append(pids, f)
			}
		}
	}
	return pids, true
}

// child reads process name's stat; ok is false unless it is a child of the
// bridge's.
func (r *reaper) child(name string) (procStat, bool) {
	pid, err := strconv.Atoi(name)
	if err != nil {
		return procStat{}, false
	}
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return procStat{}, false // gone
	}
	// pid (comm) state ppid pgrp ...; comm may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return procStat{}, false
	}
	if ppid, _ := strconv.Atoi(string(f[1])); ppid != r.self {
		return procStat{}, false
	}
	pgid, _ := strconv.Atoi(string(f[2]))
	return procStat{pid: pid, pgid: pgid, state: f[0][0]}, true
}

// cmdline is a process's command line, for logs.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(bytes.TrimRight(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), " "))
}

// keepSuffix ends the owner token of a KeepOrphans child.
const keepSuffix = ".keep"

// watchdogStdin is the write end of the watchdog's stdin: never written,
// held (here, so no finalizer closes it) until the bridge's process ends.
var watchdogStdin *os.File

// StartWatchdog starts the bridge's own executable (/proc/self/exe, so an
// upgrade that replaced the file meanwhile does not matter) with
// [WatchdogArg] as its first argument, in a process group of its own,
// after [EnableReaper]. When the bridge's process ends, however it ends
// (SIGKILL included), the watchdog's stdin reaches EOF and it ends what
// the bridge's children left (see [RunWatchdog]).
func StartWatchdog() error {
	r := theReaper.Load()
	if r == nil {
		return ErrNoReaper
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("starting the watchdog: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", WatchdogArg, strconv.Itoa(r.self), strconv.Itoa(r.pgid))
	cmd.Args[0] = os.Args[0] // for ps
	cmd.Stdin = pr
	// Nothing of the host's: it is no host process's. GOMAXPROCS=1, read by
	// the Go runtime before any package is initialized: a process that
	// spends its life in one blocking read needs one P, and a second would
	// cost it a thread and its caches (0.18 of its 1.5 MiB of private
	// memory; docs/performance.md).
	cmd.Env = []string{"GOMAXPROCS=1"}
	cmd.Dir = "/" // it keeps no folder of the host's busy
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	token, err := startChild(cmd, KeepOrphans)
	_ = pr.Close()
	if err != nil {
		_ = pw.Close()
		return fmt.Errorf("starting the watchdog: %w", err)
	}
	watchdogStdin = pw
	go func() {
		err := cmd.Wait()
		childEnded(cmd, token, KeepOrphans)
		r.log.Debug("the watchdog ended", "err", err) // the bridge serves on without it
	}()
	return nil
}

// RunWatchdog is the watchdog's process (args: the bridge's pid and process
// group): it waits until stdin ends, which happens when the bridge's process
// ends, then SIGKILLs every process whose [ownerEnv] names a child of that
// bridge (those of [KeepOrphans] children aside), with its process group,
// until none is left (at most 3 s). When the bridge ended normally there is
// none; when it was SIGKILLed these are its CLI processes (Linux ends them
// too, by their parent-death signal) and everything they started, which
// Linux gave to pid 1. It returns the exit status.
func RunWatchdog(args []string, stdin io.Reader) int {
	if len(args) != 2 {
		return 2
	}
	bridge, err1 := strconv.Atoi(args[0])
	bridgePgid, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil {
		return 2
	}
	signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGPIPE)
	return watchdog(bridge, bridgePgid, stdin)
}

// watchdog is RunWatchdog once its arguments are read.
func watchdog(bridge, bridgePgid int, stdin io.Reader) int {
	_, _ = io.Copy(io.Discard, stdin)
	prefix := strconv.Itoa(bridge) + "."
	spare := map[int]bool{bridgePgid: true, unix.Getpgrp(): true, 0: true, 1: true}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left := 0
		for _, pid := range ownedBy(prefix) {
			left++
			if pgid, err := unix.Getpgid(pid); err == nil && !spare[pgid] {
				_ = unix.Kill(-pgid, unix.SIGKILL)
			}
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		if left == 0 {
			return 0
		}
	}
	return 1
}

// ownedBy lists the live processes whose [ownerEnv] starts with prefix
// (<bridge pid>.), KeepOrphans ones aside.
func ownedBy(prefix string) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if token := ownerToken(name); strings.HasPrefix(token, prefix) && !strings.HasSuffix(token, keepSuffix) {
			out = append(out, pid)
		}
	}
	return out
}
