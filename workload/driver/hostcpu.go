package driver

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// cpuTimes is the host's CPU time in clock ticks, from /proc/stat: idle
// (idle and iowait) and in all. A run on real CPU (`distcache up
// --server-cpu`) reports the host's idle share over each measured window,
// which shows that the servers, not the machine, ran out of CPU.
type cpuTimes struct{ idle, total uint64 }

// readCPUTimes reads /proc/stat's first line; ok is false where there is
// none.
func readCPUTimes() (cpuTimes, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return cpuTimes{}, false
	}
	return parseCPULine(sc.Text())
}

// parseCPULine parses "cpu user nice system idle iowait irq softirq
// steal ...".
func parseCPULine(line string) (cpuTimes, bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		if i == 8 || i == 9 { // guest and guest_nice are inside user and nice
			continue
		}
		t.total += n
		if i == 3 || i == 4 {
			t.idle += n
		}
	}
	return t, true
}

// idleShare is the share of the host's CPU time idle between a and b, -1
// when unknown.
func idleShare(a, b cpuTimes, ok bool) float64 {
	if !ok || b.total <= a.total {
		return -1
	}
	return float64(b.idle-a.idle) / float64(b.total-a.total)
}
