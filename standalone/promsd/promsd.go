// Package promsd writes the /metrics addresses of a standalone cluster in
// Prometheus' file-based service discovery format
// (file_sd_configs: a JSON list of target groups, each with its targets and
// their labels), so that a Prometheus given the file scrapes every process
// of the cluster with labels that say what each one is: cluster, kind
// (shim, node, controlloop, gateway or supervisor), process, and layer or
// shard.
// Prometheus reads the file again when it changes; the file is replaced
// whole, never written in place. WriteConfig writes the configuration of a
// Prometheus that scrapes those targets (`distcache up --prometheus`).
package promsd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/alerts"
	"github.com/distcache/distcache/standalone/plan"
)

// Group is one target group of a file_sd file.
type Group struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// KindSupervisor is the kind label of `distcache up` itself.
const KindSupervisor = "supervisor"

// Groups are p's scrape targets: every process with a /metrics address,
// then the supervisor.
func Groups(p *plan.Plan) []Group {
	var out []Group
	for _, pr := range p.Processes {
		if pr.MetricsAddr == "" {
			continue
		}
		l := map[string]string{"cluster": p.Cluster.Name, "kind": string(pr.Kind), "process": pr.Name}
		if pr.Layer != "" {
			l["layer"] = pr.Layer
		}
		if pr.Shard != "" {
			l["shard"] = pr.Shard
		}
		out = append(out, Group{Targets: []string{pr.MetricsAddr}, Labels: l})
	}
	if p.MetricsAddr != "" {
		out = append(out, Group{Targets: []string{p.MetricsAddr},
			Labels: map[string]string{"cluster": p.Cluster.Name, "kind": KindSupervisor, "process": p.Cluster.Name + "-" + KindSupervisor}})
	}
	return out
}

// Write writes p's targets to p.TargetsFile, atomically (a temporary file
// renamed over it), so a reader never sees a partial list.
func Write(p *plan.Plan) error {
	data, err := json.MarshalIndent(Groups(p), "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the scrape targets: %w", err)
	}
	if err := renameio.WriteFile(p.TargetsFile, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write the scrape targets: %w", err)
	}
	return nil
}

// ScrapeInterval is how often the plan's Prometheus scrapes every process
// (and evaluates rules): a small cluster on one host can afford a second,
// and a demo or a test sees a change within it.
const ScrapeInterval = "1s"

// config is the part of Prometheus' configuration file WriteConfig writes.
type config struct {
	Global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
	} `json:"global"`
	RuleFiles     []string       `json:"rule_files"`
	ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
}

type scrapeConfig struct {
	JobName       string         `json:"job_name"`
	FileSDConfigs []fileSDConfig `json:"file_sd_configs"`
}

type fileSDConfig struct {
	Files           []string `json:"files"`
	RefreshInterval string   `json:"refresh_interval"`
}

// WriteConfig writes the configuration of p's Prometheus to
// p.PrometheusConfig: one job, distcache, whose targets come from
// p.TargetsFile, scraped every ScrapeInterval, and DistCache's alerting
// rules (package alerts), written beside it.
func WriteConfig(p *plan.Plan) error {
	dir := filepath.Dir(p.PrometheusConfig)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot write the Prometheus configuration: %w", err)
	}
	rules := filepath.Join(dir, alerts.FileName)
	if err := renameio.WriteFile(rules, alerts.Rules, 0o644); err != nil {
		return fmt.Errorf("cannot write the alerting rules: %w", err)
	}
	var c config
	c.Global.ScrapeInterval, c.Global.EvaluationInterval = ScrapeInterval, ScrapeInterval
	c.RuleFiles = []string{rules}
	c.ScrapeConfigs = []scrapeConfig{{JobName: "distcache",
		FileSDConfigs: []fileSDConfig{{Files: []string{p.TargetsFile}, RefreshInterval: "5s"}}}}
	data, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("cannot encode the Prometheus configuration: %w", err)
	}
	header := "# Written by distcache up: Prometheus scraping cluster " + p.Cluster.Name + ".\n"
	if err := renameio.WriteFile(p.PrometheusConfig, append([]byte(header), data...), 0o644); err != nil {
		return fmt.Errorf("cannot write the Prometheus configuration: %w", err)
	}
	return nil
}
