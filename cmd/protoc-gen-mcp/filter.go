package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

// This file holds the parameters for protos one does not own, whose options cannot be edited:
// which rpcs become tools (include, exclude, read_only), a prefix for their names
// (tool_prefix), and warnings about rpcs and fields without a comment (descriptions are what
// the model reads).

// patterns is a flag.Value that collects every value given: include=a,include=b.
type patterns []string

func (p *patterns) String() string { return strings.Join(*p, ",") }

func (p *patterns) Set(v string) error {
	for _, s := range strings.Split(v, "|") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", s, err)
		}
		*p = append(*p, s)
	}
	return nil
}

// filter is the selection of rpcs.
type filter struct {
	include, exclude patterns
	readOnly         bool
	toolPrefix       string
	warn             bool
	warned           map[string]bool
	out              io.Writer // where warnings go; nil for os.Stderr
}

func (f *filter) register(flags *flag.FlagSet) {
	flags.Var(&f.include, "include", "only the rpcs whose full name (pkg.Service.Method) matches one of these patterns (path.Match; repeat the parameter or separate with |)")
	flags.Var(&f.exclude, "exclude", "not the rpcs whose full name matches one of these patterns")
	flags.BoolVar(&f.readOnly, "read_only", false, "only the rpcs that are read-only (idempotency_level NO_SIDE_EFFECTS or read_only_hint) become tools")
	flags.StringVar(&f.toolPrefix, "tool_prefix", "", "a prefix for every tool name")
	flags.BoolVar(&f.warn, "warn_undocumented", true, "warn on stderr about rpcs and request fields without a comment")
}

// selects reports whether rpc m is generated at all (include and exclude).
func (f *filter) selects(m *protogen.Method) bool {
	name := string(m.Desc.FullName())
	if len(f.include) > 0 && !matchAny(f.include, name) {
		return false
	}
	return !matchAny(f.exclude, name)
}

// selectsTool reports whether rpc m, a tool, passes read_only.
func (f *filter) selectsTool(t *tool) bool {
	return !f.readOnly || (t.readOnly != nil && *t.readOnly)
}

func matchAny(ps []string, name string) bool {
	for _, p := range ps {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// warnUndocumented warns about a tool without a description and about the fields of its
// request (and of the messages they hold) without a comment.
func (f *filter) warnUndocumented(file *protogen.File, t *tool) {
	if !f.warn {
		return
	}
	if t.description == "" {
		f.warnf("%s: rpc %s has no comment: tool %s has no description, and descriptions are what the model reads", file.Desc.Path(), t.Desc.FullName(), t.name)
	}
	f.warnFields(t.Input, 0)
}

// warnFields warns of each field of m, and of the messages its fields hold, that has no
// comment: its schema would have no description.
func (f *filter) warnFields(m *protogen.Message, depth int) {
	if !f.visit(m, depth) {
		return
	}
	for _, fd := range m.Fields {
		if strings.TrimSpace(string(fd.Comments.Leading)+string(fd.Comments.Trailing)) == "" {
			f.warnf("%s: field %s has no comment: its schema has no description", fd.Desc.ParentFile().Path(), fd.Desc.FullName())
		}
		if fd.Message != nil {
			f.warnFields(fd.Message, depth+1)
		}
	}
}

// visit decides whether warnFields looks into m (at depth): not deeper than 8, not twice, and
// not into map entries or well-known types, whose fields are not the proto's own.
func (f *filter) visit(m *protogen.Message, depth int) bool {
	if depth > 8 || f.warned[string(m.Desc.FullName())] {
		return false
	}
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	f.warned[string(m.Desc.FullName())] = true
	return !m.Desc.IsMapEntry() && !strings.HasPrefix(string(m.Desc.FullName()), "google.protobuf.")
}

// warnf writes a warning to the filter's output, stderr by default.
func (f *filter) warnf(format string, args ...any) {
	out := f.out
	if out == nil {
		out = os.Stderr // buf and protoc show a plugin's stderr
	}
	fmt.Fprintf(out, "protoc-gen-mcp: warning: "+format+"\n", args...)
}
