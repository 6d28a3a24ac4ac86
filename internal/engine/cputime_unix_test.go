//go:build unix

package engine_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, user and system. On a
// machine shared with other work, CPU time per operation says more about the
// planner than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
