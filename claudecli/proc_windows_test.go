//go:build windows

package claudecli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// These tests run on Windows only (CI here cross-compiles and vets them);
// they check that the Job Object holds the CLI's whole tree.

// helperEnv makes the test binary act as a fake CLI ("parent": waits for
// a line on stdin, starts a "child" that sleeps, prints the child's pid,
// then sleeps or, with "parent-exit", exits).
const helperEnv = "CLAUDECLI_JOB_HELPER"

func TestJobHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "child":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "parent", "parent-exit":
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		child := exec.Command(os.Args[0], "-test.run=^TestJobHelperProcess$")
		child.Env = append(os.Environ(), helperEnv+"=child")
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(child.Process.Pid)
		if os.Getenv(helperEnv) == "parent" {
			time.Sleep(time.Minute)
		}
		os.Exit(0)
	}
}

// startTree starts the fake CLI in mode and returns it and its child's pid.
func startTree(t *testing.T, mode string) (*cliProcess, int) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cfg := Config{Path: exe, Env: append(os.Environ(), helperEnv+"="+mode)}
	p, stdin, err := startPiped(cfg, []string{"-test.run=^TestJobHelperProcess$"})
	require.NoError(t, err)
	assert.NotZero(t, p.job, "the process is in a Job Object")
	_, err = stdin.WriteString("go\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "helper said %q", line)
	return p, pid
}

// exited waits up to 5 s for process pid to end.
func exited(t *testing.T, pid int) bool {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return true // gone already
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 5000)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func TestStopEndsTheJob(t *testing.T) {
	p, child := startTree(t, "parent")
	p.Stop()
	assert.True(t, exited(t, child), "the CLI's child outlived Stop")
	assert.Zero(t, p.job, "the job handle is closed")
}

func TestExitEndsTheJob(t *testing.T) {
	p, child := startTree(t, "parent-exit")
	<-p.Done()
	assert.True(t, exited(t, child), "the CLI's child outlived it")
}

func TestPrepareGroupWindows(t *testing.T) {
	cmd := exec.Command("cmd.exe")
	PrepareGroup(cmd)
	assert.NotZero(t, cmd.SysProcAttr.CreationFlags&syscall.CREATE_NEW_PROCESS_GROUP)
	assert.Equal(t, 2*time.Second, cmd.WaitDelay)
}
