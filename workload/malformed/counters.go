package malformed

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// CounterFamilies are the series that count bad input a process dropped
// or refused: datagrams that did not parse, datagrams whose MAC failed,
// and gateway connections ended for a protocol error.
var CounterFamilies = []string{
	"distcache_malformed_packets_total",
	"distcache_mac_rejected_total",
	"distcache_gateway_protocol_errors_total",
}

// Counters are a process's CounterFamilies, each summed over its labels.
type Counters map[string]float64

// Total is the sum of every family.
func (c Counters) Total() float64 {
	var t float64
	for _, v := range c {
		t += v
	}
	return t
}

// Scrape reads the CounterFamilies from the metrics server at addr.
func Scrape(ctx context.Context, c *http.Client, addr string) (Counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("cannot scrape %s: %w", addr, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cannot scrape %s: HTTP %s", addr, resp.Status)
	}
	out := Counters{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		for _, f := range CounterFamilies {
			if name != f {
				continue
			}
			fields := strings.Fields(line)
			if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
				out[f] += v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot scrape %s: %w", addr, err)
	}
	return out, nil
}
