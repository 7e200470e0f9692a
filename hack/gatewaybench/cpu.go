package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times
// (100 on every Linux this runs on).
const clockTicks = 100

// cpuSeconds is the CPU time (user + system) pid has used so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cannot read the CPU time of %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: fields count from
	// after its closing parenthesis, where field 3 (state) starts.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks uint64
	for _, field := range f[11:13] { // utime, stime: fields 14 and 15
		v, err := strconv.ParseUint(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot parse /proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return float64(ticks) / clockTicks, nil
}

// group is a set of processes whose CPU time is summed.
type group []int

// cpu is the group's CPU seconds so far.
func (g group) cpu() (float64, error) {
	var total float64
	for _, pid := range g {
		s, err := cpuSeconds(pid)
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}
