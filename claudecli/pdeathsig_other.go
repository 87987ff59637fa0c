//go:build unix && !linux

package claudecli

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
