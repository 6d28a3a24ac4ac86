//go:build unix

package platform

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel runs the command in a process group of its own and
// kills the whole group when the context ends, so that children (kubectl
// plugins, ansible workers, sleeps in a script) die with it.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// A negative pid addresses the process group.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
