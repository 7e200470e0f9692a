package gateway_test

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestInfoStatsSections checks INFO commandstats and errorstats against
// the commands sent, CONFIG RESETSTAT, and TIME.
func TestInfoStatsSections(t *testing.T) {
	addr, _ := startGateway(t)
	rc := redisClient(t, addr, 2)
	ctx := t.Context()
	info := func(section string) string {
		t.Helper()
		s, err := rc.Info(ctx, section).Result()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rc.Set(ctx, "s:k", "v", 0)
	rc.Incr(ctx, "s:k")                 // ERR: not an integer
	rc.Do(ctx, "get")                   // rejected: wrong number of arguments
	rc.Do(ctx, "hset", "s:k", "f", "v") // WRONGTYPE
	cmds := info("commandstats")
	for _, want := range []string{
		"cmdstat_set:calls=1,", "cmdstat_get:calls=0,usec=0,", "rejected_calls=1,failed_calls=0",
		"cmdstat_hset:calls=1,",
	} {
		if !strings.Contains(cmds, want) {
			t.Errorf("INFO commandstats lacks %q:\n%s", want, cmds)
		}
	}
	if !regexp.MustCompile(`cmdstat_incr:calls=1,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=1\r`).MatchString(cmds) {
		t.Errorf("INFO commandstats lacks INCR's failed call:\n%s", cmds)
	}
	errs := info("errorstats")
	for _, want := range []string{"errorstat_ERR:count=2", "errorstat_WRONGTYPE:count=1"} {
		if !strings.Contains(errs, want) {
			t.Errorf("INFO errorstats lacks %q:\n%s", want, errs)
		}
	}
	if all, err := rc.Info(ctx).Result(); err != nil || !strings.Contains(all, "# Errorstats") || strings.Contains(all, "cmdstat_") {
		t.Error("INFO without a section lists commandstats; Redis does not")
	}
	if err := rc.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if errs := info("errorstats"); strings.Contains(errs, "errorstat_") {
		t.Errorf("errorstats after CONFIG RESETSTAT:\n%s", errs)
	}
	if st := info("stats"); !strings.Contains(st, "total_error_replies:0\r\n") || !strings.Contains(st, "total_commands_processed:2\r\n") {
		t.Errorf("stats after CONFIG RESETSTAT (itself and one INFO count, as in Redis):\n%s", st)
	}
	rc.Set(ctx, "s:k2", "v", 0)
	if cmds := info("commandstats"); !strings.Contains(cmds, "cmdstat_set:calls=1,") || strings.Contains(cmds, "cmdstat_incr") || strings.Contains(cmds, "cmdstat_get") {
		t.Errorf("commandstats after CONFIG RESETSTAT and a SET:\n%s", cmds)
	}
	if !strings.Contains(info("clients"), "blocked_clients:0") {
		t.Error("INFO clients lacks blocked_clients")
	}
	now, err := rc.Time(ctx).Result()
	if err != nil || now.Before(time.Unix(1_700_000_000, 0)) {
		t.Errorf("TIME: %v, %v", now, err)
	}
}
