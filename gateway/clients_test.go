package gateway_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// tool returns the path of a Redis tool (Debian's redis-tools, which `make
// test` installs with redis-server).
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not on PATH (make redis-server installs it): %v", name, err)
	}
	return p
}

// TestRedisCli runs Debian's redis-cli against the gateway: commands as
// arguments, a script on stdin, and --pipe's mass insertion (raw RESP with
// an ECHO marker at its end).
func TestRedisCli(t *testing.T) {
	addr, _ := startGateway(t)
	host, port, _ := net.SplitHostPort(addr)
	cli := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), tool(t, "redis-cli"), append([]string{"-h", host, "-p", port}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimRight(string(out), "\n")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"SET", "cli:a", "hello world"}, "OK"},
		{[]string{"GET", "cli:a"}, "hello world"},
		{[]string{"MSET", "cli:b", "2", "cli:c", "3"}, "OK"},
		{[]string{"MGET", "cli:a", "cli:b", "cli:none", "cli:c"}, "hello world\n2\n\n3"},
		{[]string{"EXISTS", "cli:a", "cli:none"}, "1"},
		{[]string{"DEL", "cli:a", "cli:b", "cli:none"}, "2"},
		{[]string{"GET", "cli:a"}, ""},
		{[]string{"SELECT", "0"}, "OK"},
		{[]string{"NOSUCH", "x"}, "ERR unknown command 'NOSUCH', with args beginning with: 'x' "},
	} {
		if got := cli("", tc.args...); got != tc.want {
			t.Errorf("redis-cli %s = %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	if got := cli("SET cli:s 1\nGET cli:s\nDEL cli:s\n"); got != "OK\n1\n1" {
		t.Errorf("redis-cli with commands on stdin = %q", got)
	}
	var mass bytes.Buffer
	for i := range 500 {
		k, v := "cli:mass:"+strconv.Itoa(i), strconv.Itoa(i*i)
		mass.WriteString("*3\r\n$3\r\nSET\r\n$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n")
	}
	if got := cli(mass.String(), "--pipe"); !strings.Contains(got, "errors: 0, replies: 500") {
		t.Errorf("redis-cli --pipe: %q, want 500 replies and no error", got)
	}
	if got := cli("", "GET", "cli:mass:499"); got != "249001" {
		t.Errorf("GET of the last mass-inserted key = %q", got)
	}
	if got := cli("", "INFO", "distcache"); !strings.Contains(got, "map_version:1") {
		t.Errorf("INFO distcache = %q", got)
	}
}

// TestRedisBenchmark runs Debian's redis-benchmark against the gateway,
// pipelined and not: every test completes with a throughput and no error
// reply (redis-benchmark reports errors on stderr), and its counters add up
// to the INCRs it sent. Its one warning is
// expected: the gateway has no Redis configuration for CONFIG GET save and
// appendonly to return (twemproxy has none either).
func TestRedisBenchmark(t *testing.T) {
	addr, _ := startGateway(t)
	host, port, _ := net.SplitHostPort(addr)
	for _, pipeline := range []string{"1", "16"} {
		cmd := exec.CommandContext(t.Context(), tool(t, "redis-benchmark"), "-h", host, "-p", port,
			"-t", "set,get,incr,mset", "-n", "2000", "-c", "10", "-r", "1000", "-P", pipeline, "--csv")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if warnings := strings.TrimSpace(strings.ReplaceAll(stderr.String(), "WARNING: Could not fetch server CONFIG", "")); err != nil || warnings != "" {
			t.Fatalf("redis-benchmark -P %s: %v\n%s\n%s", pipeline, err, out, stderr.String())
		}
		rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		tests := map[string]bool{}
		for _, row := range rows[1:] {
			rps, err := strconv.ParseFloat(row[1], 64)
			if err != nil || rps <= 0 {
				t.Errorf("redis-benchmark -P %s: %v", pipeline, row)
			}
			tests[strings.Fields(row[0])[0]] = true
		}
		if !tests["SET:"] && !tests["SET"] || !tests["GET"] && !tests["GET:"] || !tests["INCR"] || len(tests) != 4 {
			t.Errorf("redis-benchmark -P %s ran %v, want SET, GET, INCR and MSET:\n%s", pipeline, tests, out)
		}
	}
	// INCR increments counter:<12-digit random below 1000>: 2000 per run.
	rc := redisClient(t, addr, 2)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("counter:%012d", i)
	}
	vals, err := rc.MGet(t.Context(), keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, v := range vals {
		if v != nil {
			n, err := strconv.ParseInt(v.(string), 10, 64)
			if err != nil {
				t.Fatalf("counter %v: %v", v, err)
			}
			sum += n
		}
	}
	if sum != 2*2000 {
		t.Errorf("redis-benchmark's counters add up to %d, want the %d INCRs it sent", sum, 2*2000)
	}
}
