package kafka_test

import (
	"os"
	"strconv"
	"strings"
)

// machineCPU is the machine's CPU time from /proc/stat, in clock ticks:
// busy (all but idle and iowait) and total. ok is false where there is no
// /proc/stat.
type machineCPU struct {
	busy, total uint64
	ok          bool
}

func readMachineCPU() machineCPU {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return machineCPU{}
	}
	// user nice system idle iowait irq softirq steal; guest time, after
	// them, is counted in user already.
	var c machineCPU
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return machineCPU{}
		}
		c.total += v
		if i != 3 && i != 4 { // idle, iowait
			c.busy += v
		}
	}
	c.ok = true
	return c
}

// busyUntil is the share of the machine's CPU time busy between c and
// later.
func (c machineCPU) busyUntil(later machineCPU) (float64, bool) {
	if !c.ok || !later.ok || later.total <= c.total {
		return 0, false
	}
	return float64(later.busy-c.busy) / float64(later.total-c.total), true
}
