package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// defaultConfigFile is read from the working directory when --config is not given.
const defaultConfigFile = "protomcp.json"

// Config is protomcp.json: per-rule settings for lint and breaking, as buf.yaml has for buf
// lint and buf breaking. Every rule left out or turned off carries its reason.
type Config struct {
	Lint     RuleConfig `json:"lint"`
	Breaking RuleConfig `json:"breaking"`
}

// RuleConfig configures one command's rules.
type RuleConfig struct {
	// Only, when set, runs these rules alone.
	Only []string `json:"only,omitempty"`
	// Except turns rules off, each with the reason why.
	Except map[string]string `json:"except,omitempty"`
	// Severity overrides rules' severities: "error" or "warning".
	Severity map[string]Severity `json:"severity,omitempty"`
	// Ignore silences a rule for some tools, prompts or resources (by name, or a resource's
	// URI or URI template).
	Ignore map[string]Ignore `json:"ignore,omitempty"`
}

// Ignore lists the names a rule does not apply to, and why.
type Ignore struct {
	Names  []string `json:"names"`
	Reason string   `json:"reason"`
}

// loadConfig reads the config file at path; with path empty, protomcp.json in the working
// directory when there is one.
func loadConfig(path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = defaultConfigFile
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	c := &Config{}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// check validates the configuration against the rule IDs it may name.
func (c *RuleConfig) check(section string, known []string) error {
	var problems []string
	name := func(id string) {
		if !slices.Contains(known, id) {
			problems = append(problems, fmt.Sprintf("%s: unknown rule %s", section, id))
		}
	}
	for _, id := range c.Only {
		name(id)
	}
	for id, why := range c.Except {
		name(id)
		if strings.TrimSpace(why) == "" {
			problems = append(problems, fmt.Sprintf("%s.except.%s: give the reason the rule is off", section, id))
		}
	}
	for id, sev := range c.Severity {
		name(id)
		if sev != SeverityError && sev != SeverityWarning {
			problems = append(problems, fmt.Sprintf("%s.severity.%s: %q is neither error nor warning", section, id, sev))
		}
	}
	for id, ig := range c.Ignore {
		name(id)
		if strings.TrimSpace(ig.Reason) == "" {
			problems = append(problems, fmt.Sprintf("%s.ignore.%s: give the reason the rule is ignored", section, id))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// enabled reports whether a rule runs.
func (c *RuleConfig) enabled(id string) bool {
	if len(c.Only) > 0 && !slices.Contains(c.Only, id) {
		return false
	}
	_, off := c.Except[id]
	return !off
}

// apply drops the findings of rules that are off or ignored for their name, and sets the
// configured severities.
func (c *RuleConfig) apply(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if !c.enabled(f.Rule) {
			continue
		}
		if ig, ok := c.Ignore[f.Rule]; ok && slices.Contains(ig.Names, f.Name) {
			continue
		}
		if sev, ok := c.Severity[f.Rule]; ok {
			f.Severity = sev
		}
		out = append(out, f)
	}
	return out
}

// listFlag is a repeatable string flag that also splits on commas.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
