package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Severity is how much a finding matters: an error fails the command (exit status 1), a
// warning is reported only.
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding is one problem that lint or breaking found.
type Finding struct {
	// Rule is the rule's ID, e.g. TOOL_DESCRIPTION.
	Rule string `json:"rule"`
	// Severity is the rule's severity, after configuration.
	Severity Severity `json:"severity"`
	// Provider is the model provider whose documented limits the rule checks: openai,
	// anthropic or gemini; empty for the MCP spec's and protomcp's own rules.
	Provider string `json:"provider,omitempty"`
	// File is the manifest that has the problem (for breaking, the new one; the old one
	// when the thing is gone).
	File string `json:"file"`
	// Kind is tool, prompt or resource.
	Kind string `json:"kind,omitempty"`
	// Name is the tool's or prompt's name, or the resource's URI or URI template.
	Name string `json:"name,omitempty"`
	// Path is a JSON Pointer into the tool's input schema ("" for the root), or names the
	// part of the tool that the finding is about (e.g. "annotations", "outputSchema/...").
	Path string `json:"path,omitempty"`
	// Message says what is wrong and, where it helps, how to fix it.
	Message string `json:"message"`
}

// sortFindings orders findings by file, kind, name, path and rule, so that output is stable.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		for _, c := range [][2]string{{a.File, b.File}, {a.Kind, b.Kind}, {a.Name, b.Name}, {a.Path, b.Path}, {a.Rule, b.Rule}} {
			if c[0] != c[1] {
				return c[0] < c[1]
			}
		}
		return false
	})
}

// hasErrors reports whether a finding is error-level.
func hasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// report writes findings as text, one line each for a person and a CI log, or as a JSON
// array.
func report(w io.Writer, format string, fs []Finding) error {
	sortFindings(fs)
	if format == "json" {
		if fs == nil {
			fs = []Finding{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(fs); err != nil {
			return fmt.Errorf("write findings: %w", err)
		}
		return nil
	}
	var errs, warns int
	for _, f := range fs {
		var b strings.Builder
		b.WriteString(f.File)
		b.WriteString(": ")
		if f.Kind != "" {
			fmt.Fprintf(&b, "%s %s: ", f.Kind, f.Name)
		}
		if f.Path != "" {
			fmt.Fprintf(&b, "%s: ", f.Path)
		}
		tag := string(f.Severity)
		if f.Provider != "" {
			tag = f.Provider + ", " + tag
		}
		fmt.Fprintf(&b, "%s (%s): %s", f.Rule, tag, f.Message)
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return fmt.Errorf("write findings: %w", err)
		}
		if f.Severity == SeverityError {
			errs++
		} else {
			warns++
		}
	}
	if len(fs) > 0 {
		if _, err := fmt.Fprintf(w, "%d error(s), %d warning(s)\n", errs, warns); err != nil {
			return fmt.Errorf("write findings: %w", err)
		}
	}
	return nil
}
