package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/protomcp/protomcp/internal/manifest"
)

// breakingRule is one class of change that breaks agents or typed clients (or, at warning
// level, changes what a model reads).
type breakingRule struct {
	ID       string
	Severity Severity
	Summary  string
}

var breakingRules = []breakingRule{
	{"TOOL_REMOVED", SeverityError, "a tool is gone: every agent, prompt and client that names it fails"},
	{"TOOL_RENAMED", SeverityError, "a tool's rpc is served under another name: the old name is gone"},
	{"PROMPT_REMOVED", SeverityError, "a prompt is gone (or renamed)"},
	{"RESOURCE_REMOVED", SeverityError, "a resource URI or resource template is gone (or changed)"},
	{"REQUIRED_INPUT_ADDED", SeverityError, "a tool's input, or a prompt's arguments, has a new required property: existing calls lack it"},
	{"INPUT_PROPERTY_REMOVED", SeverityError, "a property of a tool's input is gone: calls that send it are refused (additionalProperties is false)"},
	{"INPUT_TYPE_NARROWED", SeverityError, "an input property accepts fewer types than before"},
	{"INPUT_ENUM_NARROWED", SeverityError, "an input property accepts fewer enum values than before"},
	{"OUTPUT_FIELD_REMOVED", SeverityError, "a field of a tool's structured result, or the whole output schema, is gone: typed clients read it"},
	{"OUTPUT_TYPE_CHANGED", SeverityError, "a field of a tool's structured result may now hold a type it could not before"},
	{"ANNOTATION_RISK_WIDENED", SeverityError, "a tool's effective hints widen its risk: no longer read-only or idempotent, now destructive or open-world"},
	{"SCOPE_ADDED", SeverityError, "a tool needs a new OAuth scope: existing tokens are refused with 403"},
	{"DESCRIPTION_CHANGED", SeverityWarning, "a title or description changed: what models read to choose and call the tool changed"},
}

func breakingRuleIDs() []string {
	ids := make([]string, len(breakingRules))
	for i, r := range breakingRules {
		ids[i] = r.ID
	}
	return ids
}

func breakingRuleByID(id string) breakingRule {
	for _, r := range breakingRules {
		if r.ID == id {
			return r
		}
	}
	panic("unknown breaking rule " + id)
}

// breaking compares the surface of two sets of manifests, each one server's.
func breaking(old, cur []manifest.Loaded, cfg *RuleConfig) ([]Finding, error) {
	was, err := newSurface(old)
	if err != nil {
		return nil, err
	}
	now, err := newSurface(cur)
	if err != nil {
		return nil, err
	}
	var out []Finding
	add := func(rule string, f Finding) {
		f.Rule = rule
		f.Severity = breakingRuleByID(rule).Severity
		out = append(out, f)
	}
	compareTools(was, now, add)
	comparePrompts(was, now, add)
	compareResources(was, now, add)
	out = cfg.apply(out)
	sortFindings(out)
	return out, nil
}

type addFunc func(rule string, f Finding)

func compareTools(was, now *surface, add addFunc) {
	byName, byRPC := map[string]lintTool{}, map[string]lintTool{}
	for _, t := range now.tools {
		byName[t.Name] = t
		byRPC[t.RPC] = t
	}
	for _, o := range was.tools {
		n, ok := byName[o.Name]
		if !ok {
			if r, renamed := byRPC[o.RPC]; renamed {
				add("TOOL_RENAMED", Finding{File: r.file, Kind: "tool", Name: o.Name,
					Message: fmt.Sprintf("rpc %s is now the tool %q: agents and prompts that name %q fail", o.RPC, r.Name, o.Name)})
				continue
			}
			add("TOOL_REMOVED", Finding{File: o.file, Kind: "tool", Name: o.Name,
				Message: fmt.Sprintf("the tool is gone (it was rpc %s)", o.RPC)})
			continue
		}
		f := Finding{File: n.file, Kind: "tool", Name: n.Name}
		at := func(path, format string, args ...any) Finding {
			g := f
			g.Path, g.Message = path, fmt.Sprintf(format, args...)
			return g
		}
		if o.Title != n.Title {
			add("DESCRIPTION_CHANGED", at("title", "the title changed from %q to %q", o.Title, n.Title))
		}
		if o.Description != n.Description {
			add("DESCRIPTION_CHANGED", at("description", "the description changed: models read it to choose the tool"))
		}
		for _, sc := range n.Scopes {
			if !contains(o.Scopes, sc) {
				add("SCOPE_ADDED", at("scopes", "the tool now needs the scope %q: tokens granted without it are refused", sc))
			}
		}
		if why := riskWidened(o.Annotations, n.Annotations); why != "" {
			add("ANNOTATION_RISK_WIDENED", at("annotations", "%s: clients that ran it without asking may now need the user's confirmation", why))
		}
		c := schemaComparison{oldRoot: o.in, newRoot: n.in, add: add, at: at}
		c.input(o.in, n.in, "", 0)
		oOut, err1 := decodeSchema(o.OutputSchema)
		nOut, err2 := decodeSchema(n.OutputSchema)
		if err1 != nil || err2 != nil {
			continue
		}
		if oOut != nil && nOut == nil {
			add("OUTPUT_FIELD_REMOVED", at("outputSchema", "the tool no longer has a structured result: typed clients decode it"))
			continue
		}
		oc := schemaComparison{oldRoot: oOut, newRoot: nOut, add: add, at: at}
		oc.output(oOut, nOut, "outputSchema", 0)
	}
}

// riskWidened says how the new hints widen the tool's risk, with the spec's defaults for
// unset hints (spec 2025-11-25, Schema, ToolAnnotations), or "".
func riskWidened(o, n *manifest.Annotations) string {
	oRO, oD, oI, oOW := o.Effective()
	nRO, nD, nI, nOW := n.Effective()
	var why []string
	if oRO && !nRO {
		why = append(why, "no longer read-only")
	}
	// destructiveHint is meaningful only when readOnlyHint is false.
	if !nRO && nD && (oRO || !oD) {
		why = append(why, "now destructive")
	}
	if oI && !nI {
		why = append(why, "no longer idempotent")
	}
	if !oOW && nOW {
		why = append(why, "now open-world")
	}
	return strings.Join(why, ", ")
}

// schemaComparison compares an old and a new version of a schema.
type schemaComparison struct {
	oldRoot, newRoot schema
	add              addFunc
	at               func(path, format string, args ...any) Finding
}

// maxCompareDepth bounds the comparison of recursive schemas (through $ref).
const maxCompareDepth = 32

func deref(root, s schema) schema {
	for i := 0; i < 8 && s != nil; i++ {
		target := resolveRef(root, s)
		if target == nil {
			return s
		}
		s = target
	}
	return s
}

// input compares an input schema: the new one must accept every call the old one did.
func (c *schemaComparison) input(o, n schema, path string, depth int) {
	o, n = deref(c.oldRoot, o), deref(c.newRoot, n)
	if o == nil || n == nil || depth > maxCompareDepth {
		return
	}
	ot, nt := acceptedTypes(o), acceptedTypes(n)
	if len(nt) > 0 {
		var lost []string
		if len(ot) == 0 {
			lost = append(lost, "any type")
		}
		for _, t := range sortedSet(ot) {
			if !nt[t] {
				lost = append(lost, t)
			}
		}
		if len(lost) > 0 {
			c.add("INPUT_TYPE_NARROWED", c.at(pathOrRoot(path), "no longer accepts %s (accepts %s)", strings.Join(lost, ", "), strings.Join(sortedSet(nt), ", ")))
		}
	}
	if nv, nok := enumValues(n); nok {
		ov, ook := enumValues(o)
		var lost []string
		if !ook {
			lost = append(lost, "values outside the new enum")
		}
		for _, v := range sortedSet(ov) {
			if !nv[v] {
				lost = append(lost, v)
			}
		}
		if len(lost) > 0 {
			c.add("INPUT_ENUM_NARROWED", c.at(pathOrRoot(path), "no longer accepts %s", strings.Join(lost, ", ")))
		}
	}
	ob, nb := objectBranches(o), objectBranches(n)
	if len(ob) > 0 && len(nb) > 0 {
		op, np := properties(ob[0]), properties(nb[0])
		oreq, nreq := required(ob[0]), required(nb[0])
		for _, name := range sortedKeys(np) {
			if nreq[name] && !oreq[name] {
				c.add("REQUIRED_INPUT_ADDED", c.at(path+"/properties/"+escapePointer(name), "%q is now required: calls without it are refused", name))
			}
		}
		closed := false
		if ap, ok := nb[0]["additionalProperties"].(bool); ok && !ap {
			closed = true
		}
		for _, name := range sortedKeys(op) {
			sub := path + "/properties/" + escapePointer(name)
			nsub, ok := np[name].(schema)
			if !ok {
				if closed {
					c.add("INPUT_PROPERTY_REMOVED", c.at(sub, "%q is gone and the object allows no other properties: calls that send it are refused", name))
				}
				continue
			}
			osub, _ := op[name].(schema)
			if description(deref(c.oldRoot, osub)) != description(deref(c.newRoot, nsub)) {
				c.add("DESCRIPTION_CHANGED", c.at(sub, "the description of %q changed", name))
			}
			c.input(osub, nsub, sub, depth+1)
		}
	}
	if oi, ni := arrayItems(o), arrayItems(n); oi != nil && ni != nil {
		c.input(oi, ni, path+"/items", depth+1)
	}
}

// output compares a structured result's schema: every field the old one had must still be
// there, of no new type.
func (c *schemaComparison) output(o, n schema, path string, depth int) {
	o, n = deref(c.oldRoot, o), deref(c.newRoot, n)
	if o == nil || n == nil || depth > maxCompareDepth {
		return
	}
	ot, nt := acceptedTypes(o), acceptedTypes(n)
	if len(ot) > 0 {
		var gained []string
		if len(nt) == 0 {
			gained = append(gained, "any type")
		}
		for _, t := range sortedSet(nt) {
			if !ot[t] {
				gained = append(gained, t)
			}
		}
		if len(gained) > 0 {
			c.add("OUTPUT_TYPE_CHANGED", c.at(path, "may now be %s (was %s): typed clients cannot decode it", strings.Join(gained, ", "), strings.Join(sortedSet(ot), ", ")))
		}
	}
	ob, nb := objectBranches(o), objectBranches(n)
	if len(ob) > 0 && len(nb) > 0 {
		op, np := properties(ob[0]), properties(nb[0])
		for _, name := range sortedKeys(op) {
			sub := path + "/properties/" + escapePointer(name)
			nsub, ok := np[name].(schema)
			if !ok {
				c.add("OUTPUT_FIELD_REMOVED", c.at(sub, "the result field %q is gone: clients that read it break", name))
				continue
			}
			osub, _ := op[name].(schema)
			c.output(osub, nsub, sub, depth+1)
		}
	}
	if oi, ni := arrayItems(o), arrayItems(n); oi != nil && ni != nil {
		c.output(oi, ni, path+"/items", depth+1)
	}
}

// arrayItems returns the items schema of an array schema, or of the array branch of a
// nullable anyOf.
func arrayItems(s schema) schema {
	if it, ok := s["items"].(schema); ok {
		return it
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		arr, _ := s[kw].([]any)
		for _, v := range arr {
			if sub, ok := v.(schema); ok {
				if it, ok := sub["items"].(schema); ok {
					return it
				}
			}
		}
	}
	return nil
}

func pathOrRoot(p string) string {
	if p == "" {
		return "inputSchema"
	}
	return p
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func comparePrompts(was, now *surface, add addFunc) {
	byName := map[string]lintItem[manifest.Prompt]{}
	for _, p := range now.prompts {
		byName[p.item.Name] = p
	}
	for _, o := range was.prompts {
		n, ok := byName[o.item.Name]
		if !ok {
			add("PROMPT_REMOVED", Finding{File: o.file, Kind: "prompt", Name: o.item.Name,
				Message: fmt.Sprintf("the prompt is gone (it was rpc %s)", o.item.RPC)})
			continue
		}
		f := Finding{File: n.file, Kind: "prompt", Name: n.item.Name}
		old := map[string]manifest.Argument{}
		for _, a := range o.item.Arguments {
			old[a.Name] = a
		}
		for _, a := range n.item.Arguments {
			if a.Required && !old[a.Name].Required {
				g := f
				g.Path, g.Message = "arguments/"+a.Name, fmt.Sprintf("argument %q is now required: prompts/get without it is refused", a.Name)
				add("REQUIRED_INPUT_ADDED", g)
			}
		}
		if o.item.Description != n.item.Description || o.item.Title != n.item.Title {
			g := f
			g.Path, g.Message = "description", "the title or description changed"
			add("DESCRIPTION_CHANGED", g)
		}
	}
}

func compareResources(was, now *surface, add addFunc) {
	byKey := map[string]lintItem[manifest.Resource]{}
	for _, r := range now.resources {
		byKey[r.item.Key()] = r
	}
	for _, o := range was.resources {
		n, ok := byKey[o.item.Key()]
		if !ok {
			add("RESOURCE_REMOVED", Finding{File: o.file, Kind: "resource", Name: o.item.Key(),
				Message: "the resource is gone: clients that read it, or saved its URI, fail"})
			continue
		}
		if o.item.Description != n.item.Description || o.item.Title != n.item.Title {
			add("DESCRIPTION_CHANGED", Finding{File: n.file, Kind: "resource", Name: n.item.Key(), Path: "description",
				Message: "the title or description changed"})
		}
	}
}
