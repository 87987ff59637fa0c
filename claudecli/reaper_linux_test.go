package claudecli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reaperChildEnv, set, makes TestReaper run its cases: in a process of its
// own, since a child subreaper stays one and takes every child the package's
// other tests start (not through the reaper) for an orphan.
const reaperChildEnv = "CLAUDECLI_REAPER_TEST"

func TestReaper(t *testing.T) {
	marker := os.Getenv(reaperChildEnv)
	if marker == "" {
		marker = strconv.FormatInt(time.Now().UnixNano(), 36)
		cmd := exec.Command(os.Args[0], "-test.run=^TestReaper$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), reaperChildEnv+"="+marker)
		out, err := cmd.CombinedOutput()
		t.Logf("the reaper's process:\n%s", out)
		require.NoError(t, err)
		assert.Empty(t, withEnv(reaperChildEnv+"="+marker), "processes left after the reaper's process exited")
		return
	}
	require.NoError(t, EnableReaper(nil))
	self := os.Getpid()
	left := func() []int {
		var out []int
		for _, pid := range withEnv(reaperChildEnv + "=" + marker) {
			if pid != self {
				out = append(out, pid)
			}
		}
		return out
	}

	t.Run("what an ended child left ends with it", func(t *testing.T) {
		// A (a session of its own) runs B (another) and outlives the
		// child: A comes to the reaper when the child ends, B when A is
		// ended.
		cmd := exec.Command("sh", "-c", `setsid sh -c 'setsid sleep 1000 & echo $!; sleep 1000' & sleep 0.3`)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.WaitDelay = 5 * time.Second // A holds the output: without a reaper, Wait would wait for it forever
		start := time.Now()
		require.NoError(t, RunCommand(cmd, EndOrphans))
		t.Logf("RunCommand returned after %v", time.Since(start))
		b, err := strconv.Atoi(strings.TrimSpace(out.String()))
		require.NoError(t, err, "B's pid: %q", out.String())
		assert.Empty(t, left(), "nothing the child started is left")
		_, err = os.Stat("/proc/" + strconv.Itoa(b))
		assert.True(t, os.IsNotExist(err), "B is reaped, not a zombie")
	})

	t.Run("what a KeepOrphans child left runs on and is reaped when it ends", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", `setsid sleep 1000 >/dev/null 2>&1 & echo $!`)
		var out bytes.Buffer
		cmd.Stdout = &out
		require.NoError(t, RunCommand(cmd, KeepOrphans))
		pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
		require.NoError(t, err)
		SettleOrphans(time.Second)
		require.Equal(t, []int{pid}, left(), "the background job runs on")
		require.Equal(t, self, parentOf(pid), "adopted by the reaper")
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		assert.Eventually(t, func() bool {
			_, err := os.Stat("/proc/" + strconv.Itoa(pid))
			return os.IsNotExist(err)
		}, 5*time.Second, 10*time.Millisecond, "reaped once it ended")
	})

	t.Run("the bridge's own children are never taken for orphans", func(t *testing.T) {
		// Sweeps run all along (each child's end, SIGCHLD, SettleOrphans);
		// a sweep that waited for a child of os/exec's would leave its
		// Wait without the exit status, or kill it.
		stop := make(chan struct{})
		var sweeps sync.WaitGroup
		sweeps.Add(1)
		go func() {
			defer sweeps.Done()
			for {
				select {
				case <-stop:
					return
				default:
					SettleOrphans(0)
				}
			}
		}()
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command("sh", "-c", "sleep 0.05; exit "+strconv.Itoa(i%7+1))
				var exit *exec.ExitError
				if err := RunCommand(cmd, EndOrphans); !errors.As(err, &exit) || exit.ExitCode() != i%7+1 {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(stop)
		sweeps.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("a child's own exit status: got %v", err)
		}
	})
}

func TestWatchdog(t *testing.T) {
	// A bridge pid above Linux's pid_max: no real bridge's tokens match.
	const bridge = 4194399
	start := func(token string) *exec.Cmd {
		cmd := exec.Command("sleep", "1000")
		cmd.Env = []string{ownerEnv + "=" + token}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	cli := start("4194399.3")
	job := start("4194399.4" + keepSuffix)
	other := start("41943990.3") // another bridge's
	ended := make(chan *os.ProcessState, 1)
	go func() { st, _ := cli.Process.Wait(); ended <- st }()

	stdin, w := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- watchdog(bridge, syscall.Getpgrp(), stdin) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case <-ended:
		t.Fatal("the watchdog acted before its stdin ended")
	default:
	}
	require.NoError(t, w.Close()) // the bridge's process ended
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the watchdog did not return")
	}
	select {
	case st := <-ended:
		assert.Equal(t, "signal: killed", st.String(), "the CLI's process is ended")
	case <-time.After(5 * time.Second):
		t.Fatal("the CLI's process runs on")
	}
	assert.NoError(t, job.Process.Signal(syscall.Signal(0)), "a KeepOrphans child's process runs on")
	assert.NoError(t, other.Process.Signal(syscall.Signal(0)), "another bridge's process runs on")
}

// withEnv lists the live processes (zombies aside) whose environment holds kv.
func withEnv(kv string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte(kv+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// parentOf returns pid's parent process id, or 0.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}

// BenchmarkSweep is what a sweep costs: from the kernel's lists of the
// bridge's children (each SIGCHLD), and from every process's stat (the
// last of each child's end).
func BenchmarkSweep(b *testing.B) {
	r := &reaper{self: os.Getpid(), pgid: syscall.Getpgrp(), own: map[int]ownedChild{}, keep: map[string]bool{}, killed: map[int]bool{}}
	ents, _ := os.ReadDir("/proc")
	b.ReportMetric(float64(len(ents)), "proc-entries")
	for _, full := range []bool{false, true} {
		b.Run("full="+strconv.FormatBool(full), func(b *testing.B) {
			for b.Loop() {
				if r.sweep(full) != 0 {
					b.Fatal("the benchmark's process has no orphans to end")
				}
			}
		})
	}
}
