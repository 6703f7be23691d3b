package bridgecmd

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intercom-dev/intercom/internal/bridge"
	"github.com/intercom-dev/intercom/internal/kongrun"
)

func TestParseExports(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   []bridge.Export
		bad    string // a usage error naming this value
	}{
		{values: nil, want: nil},
		{values: []string{"build/"}, want: []bridge.Export{{Prefix: "build/"}}},
		{values: []string{"laptop=ci.", "deploy"}, want: []bridge.Export{{Host: "laptop", Prefix: "ci."}, {Prefix: "deploy"}}},
		{values: []string{"Laptop=ci"}, bad: `"Laptop=ci"`},
		{values: []string{"laptop=a@b"}, bad: `"laptop=a@b"`},
		{values: []string{"has space"}, bad: `"has space"`},
		{values: []string{"/"}, bad: `"/"`},
	} {
		got, err := parseExports(tc.values)
		if tc.bad != "" {
			var u kongrun.UsageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("parseExports(%q) = %v, %v; want a usage error naming %s", tc.values, got, err, tc.bad)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseExports(%q) = %+v, %v; want %+v", tc.values, got, err, tc.want)
		}
	}
}

func TestFmtBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0MiB", 1 << 20: "1MiB", 64 << 20: "64MiB", 1000: "1000", 1<<20 + 1: "1048577"} {
		if got := fmtBytes(n); got != want {
			t.Errorf("fmtBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLimitVarsNameEveryQuotaFlag(t *testing.T) {
	vars := limitVars()
	for _, name := range []string{"max_msgs_per_sec", "max_bytes_per_sec", "max_inbox_messages", "max_inbox_bytes",
		"max_topic_records", "max_topic_bytes", "max_subscriptions", "max_presence_rows", "max_hosts"} {
		if v, ok := vars[name]; !ok || v == "" {
			t.Errorf("limitVars()[%q] = %q, %v; want a default", name, v, ok)
		}
	}
}

func TestCRLValidity(t *testing.T) {
	for _, tc := range []struct {
		days     int
		override time.Duration
		want     time.Duration
	}{
		{365, 0, 365 * 24 * time.Hour},
		{7, 0, 7 * 24 * time.Hour},
		{365, time.Minute, time.Minute},
	} {
		if got := crlValidity(tc.days, tc.override); got != tc.want {
			t.Errorf("crlValidity(%d, %v) = %v, want %v", tc.days, tc.override, got, tc.want)
		}
	}
}
