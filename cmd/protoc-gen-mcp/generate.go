package main

import (
	"flag"
	"fmt"
	"path"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

const (
	contextPackage = protogen.GoImportPath("context")
	runtimePackage = protogen.GoImportPath("github.com/protomcp/protomcp/runtime")
	// bufvalidatePackage enforces buf.validate rules; only code whose requests have some
	// imports it.
	bufvalidatePackage = protogen.GoImportPath("github.com/protomcp/protomcp/bufvalidate")

	// toolResultName is the response type of free-form-content tools: its content blocks are
	// sent as they are, and the tool advertises no outputSchema.
	toolResultName = "mcp.v1.ToolResult"
)

// config holds the plugin's parameters.
type config struct {
	packageSuffix  string
	maxSchemaBytes int
	skeleton       bool
}

// defaultMaxSchemaBytes bounds each generated schema. Shared messages go to $defs, so schemas
// grow linearly with the proto; one larger than this is more than a model's context should
// carry, and is better refused at generate time than shipped.
const defaultMaxSchemaBytes = 256 << 10

func newConfig(flags *flag.FlagSet) *config {
	c := &config{}
	flags.StringVar(&c.packageSuffix, "package_suffix", "mcp",
		"suffix of the generated Go package's name and directory; empty generates next to the .pb.go files")
	flags.IntVar(&c.maxSchemaBytes, "max_schema_bytes", defaultMaxSchemaBytes,
		"the largest JSON Schema, in bytes, that a tool may have")
	flags.BoolVar(&c.skeleton, "skeleton", false,
		"also write <file>.skeleton.go.txt: a starter server with every method stubbed, to copy out and edit")
	return c
}

// service is one protobuf service and the tools it exposes.
type service struct {
	*protogen.Service
	tools     []*tool
	prompts   []*prompt
	resources []*resource
	statics   []*mcpv1.StaticResource // (mcp.v1.service).resources
}

// tool is one rpc exposed as an MCP tool.
type tool struct {
	*protogen.Method
	name         string // the MCP tool name
	constName    string // the exported Go constant holding name
	schemaPrefix string // prefix of the unexported schema constants
	title        string
	description  string
	readOnly     *bool
	destructive  *bool
	idempotent   *bool
	openWorld    *bool
	scopes       []string // OAuth scopes a caller's token needs
	inputSchema  string
	outputSchema string // empty for mcp.v1.ToolResult responses
	validates    bool   // the arguments have buf.validate rules, enforced with protovalidate
	streaming    bool   // a server-streaming rpc: progress notifications, then the last message
}

func (c *config) generate(gen *protogen.Plugin) error {
	gen.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL |
		pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	gen.SupportedEditionsMinimum = descriptorpb.Edition_EDITION_PROTO2
	gen.SupportedEditionsMaximum = descriptorpb.Edition_EDITION_2024

	// Tools generated into one Go package are likely registered on one server: their names
	// must not collide. Keyed by Go import path, then tool name, valued by the rpc that has it.
	used := map[protogen.GoImportPath]map[string]string{}
	// Likewise for the Go identifiers generated into one package, by import path.
	declared := map[protogen.GoImportPath]map[string]string{}
	for _, f := range gen.Files {
		if !f.Generate {
			continue
		}
		services, err := c.collect(f)
		if err != nil {
			return err
		}
		if len(services) == 0 {
			continue
		}
		filename, importPath, pkgName := c.output(f)
		names := used[importPath]
		if names == nil {
			names = map[string]string{}
			used[importPath] = names
		}
		for _, s := range services {
			for _, t := range s.tools {
				if other, ok := names[t.name]; ok {
					return fmt.Errorf("%s: rpc %s: tool name %q is already used by rpc %s, generated into the same Go package %s",
						f.Desc.Path(), t.Desc.FullName(), t.name, other, importPath)
				}
				names[t.name] = string(t.Desc.FullName()) + " (" + f.Desc.Path() + ")"
			}
		}
		idents := declared[importPath]
		firstInPackage := idents == nil
		if idents == nil {
			idents = map[string]string{}
			declared[importPath] = idents
			if c.packageSuffix == "" {
				// Beside the .pb.go files: their identifiers share the package.
				for _, other := range gen.Files {
					if other.GoImportPath == importPath {
						protoGoIdents(other, idents)
					}
				}
			}
		}
		for _, s := range services {
			for _, id := range s.goIdents(f) {
				if other, ok := idents[id.name]; ok {
					return fmt.Errorf("%s: %s: the generated Go identifier %s collides with %s, in Go package %s: rename one of them, or generate into another package (package_suffix)",
						f.Desc.Path(), id.source, id.name, other, importPath)
				}
				idents[id.name] = id.source + " (" + f.Desc.Path() + ")"
			}
		}
		g := gen.NewGeneratedFile(filename, importPath)
		// A package of its own gets a package doc, on its first file only; beside the .pb.go
		// files the package is protoc-gen-go's.
		packageDoc := firstInPackage && c.packageSuffix != ""
		generateFile(g, f, pkgName, services, packageDoc)
		if c.skeleton {
			if err := generateSkeleton(gen, f, filename, importPath, pkgName, services); err != nil {
				return err
			}
		}
	}
	return nil
}

// goIdent is a package-level Go identifier that the plugin generates, and what it is generated
// from.
type goIdent struct {
	name, source string
}

// goIdents lists the package-level identifiers generated for s.
func (s *service) goIdents(f *protogen.File) []goIdent {
	svc := "service " + string(s.Desc.FullName())
	name := s.GoName
	ids := []goIdent{
		{name + "Name", svc}, {name + "Client", svc}, {"New" + name + "Client", svc},
		{unexport(name) + "Client", svc}, {name + "Handler", svc},
		{"Unimplemented" + name + "Handler", svc}, {"Register" + name + "Handler", svc},
	}
	for _, t := range s.tools {
		rpc := "rpc " + string(t.Desc.FullName())
		ids = append(ids, goIdent{t.constName, rpc}, goIdent{t.schemaPrefix + "InputSchema", rpc})
		if t.outputSchema != "" {
			ids = append(ids, goIdent{t.schemaPrefix + "OutputSchema", rpc})
		}
	}
	for _, p := range s.prompts {
		rpc := "rpc " + string(p.Desc.FullName())
		ids = append(ids, goIdent{p.constName, rpc})
		if len(p.args) > 0 {
			ids = append(ids, goIdent{name + p.GoName + "Completer", rpc})
		}
	}
	for _, r := range s.resources {
		rpc := "rpc " + string(r.Desc.FullName())
		ids = append(ids, goIdent{r.constName, rpc})
		if r.uriTemplate != "" {
			ids = append(ids, goIdent{name + r.GoName + "Completer", rpc})
		}
	}
	return ids
}

// protoGoIdents adds the package-level identifiers that protoc-gen-go declares for f.
func protoGoIdents(f *protogen.File, idents map[string]string) {
	from := " (" + f.Desc.Path() + ", protoc-gen-go)"
	idents[f.GoDescriptorIdent.GoName] = "the descriptor of " + f.Desc.Path() + from
	enum := func(e *protogen.Enum) {
		what := "enum " + string(e.Desc.FullName()) + from
		idents[e.GoIdent.GoName] = what
		idents[e.GoIdent.GoName+"_name"] = what
		idents[e.GoIdent.GoName+"_value"] = what
		for _, v := range e.Values {
			idents[v.GoIdent.GoName] = "enum value " + string(v.Desc.FullName()) + from
		}
	}
	for _, e := range f.Enums {
		enum(e)
	}
	for _, x := range f.Extensions {
		idents["E_"+x.GoIdent.GoName] = "extension " + string(x.Desc.FullName()) + from
	}
	var message func(m *protogen.Message)
	message = func(m *protogen.Message) {
		if m.Desc.IsMapEntry() {
			return // protoc-gen-go declares no type for map entries
		}
		idents[m.GoIdent.GoName] = "message " + string(m.Desc.FullName()) + from
		for _, fd := range m.Fields {
			if fd.Oneof != nil && !fd.Oneof.Desc.IsSynthetic() {
				idents[fd.GoIdent.GoName] = "oneof field " + string(fd.Desc.FullName()) + from
			}
		}
		for _, e := range m.Enums {
			enum(e)
		}
		for _, x := range m.Extensions {
			idents["E_"+x.GoIdent.GoName] = "extension " + string(x.Desc.FullName()) + from
		}
		for _, n := range m.Messages {
			message(n)
		}
	}
	for _, m := range f.Messages {
		message(m)
	}
}

// output places the generated file: in a subpackage named after the .pb.go package plus the
// suffix, as connect-go does, or beside the .pb.go file when the suffix is empty.
func (c *config) output(f *protogen.File) (filename string, importPath protogen.GoImportPath, pkgName protogen.GoPackageName) {
	prefix := path.Clean(strings.ReplaceAll(f.GeneratedFilenamePrefix, "\\", "/"))
	if c.packageSuffix == "" {
		return prefix + ".mcp.go", f.GoImportPath, f.GoPackageName
	}
	pkgName = f.GoPackageName + protogen.GoPackageName(c.packageSuffix)
	importPath = protogen.GoImportPath(path.Join(string(f.GoImportPath), string(pkgName)))
	filename = path.Join(path.Dir(prefix), string(pkgName), path.Base(prefix)) + ".mcp.go"
	return filename, importPath, pkgName
}

// collect validates a file's services and computes their tools. Every problem is an error
// naming the file and the rpc: a tool that silently disappears is worse than a failed build.
func (c *config) collect(f *protogen.File) ([]*service, error) {
	var services []*service
	names := map[string]string{}   // tool name -> rpc, across the file's services
	prompts := map[string]string{} // prompt name -> rpc
	uris := map[string]string{}    // resource URI or URI template -> rpc
	for _, svc := range f.Services {
		s := &service{Service: svc}
		svcOpts, _ := proto.GetExtension(svc.Desc.Options(), mcpv1.E_Service).(*mcpv1.ServiceOptions)
		for _, m := range svc.Methods {
			toolOpts, promptOpts, resourceOpts := methodKind(m)
			switch {
			case toolOpts.GetSkip():
				continue
			case promptOpts != nil && resourceOpts != nil:
				return nil, methodFail(f, m)("an rpc is a tool, a prompt or a resource: it cannot have both (mcp.v1.prompt) and (mcp.v1.resource)")
			case (promptOpts != nil || resourceOpts != nil) && toolOpts != nil:
				return nil, methodFail(f, m)("an rpc is a tool, a prompt or a resource: (mcp.v1.tool) cannot be combined with (mcp.v1.prompt) or (mcp.v1.resource)")
			case promptOpts != nil:
				p, err := newPrompt(f, m, promptOpts)
				if err != nil {
					return nil, err
				}
				if other, ok := prompts[p.name]; ok {
					return nil, methodFail(f, m)("prompt name %q is already used by rpc %s", p.name, other)
				}
				prompts[p.name] = string(m.Desc.FullName())
				s.prompts = append(s.prompts, p)
				continue
			case resourceOpts != nil:
				r, err := newResource(f, m, resourceOpts)
				if err != nil {
					return nil, err
				}
				key := r.uri + r.uriTemplate
				if other, ok := uris[key]; ok {
					return nil, methodFail(f, m)("resource %q is already served by rpc %s", key, other)
				}
				uris[key] = string(m.Desc.FullName())
				s.resources = append(s.resources, r)
				continue
			}
			t, err := c.newTool(f, svcOpts, m)
			if err != nil {
				return nil, err
			}
			if t == nil {
				continue
			}
			if other, ok := names[t.name]; ok {
				return nil, fmt.Errorf("%s: rpc %s: tool name %q is already used by rpc %s", f.Desc.Path(), m.Desc.FullName(), t.name, other)
			}
			names[t.name] = string(m.Desc.FullName())
			s.tools = append(s.tools, t)
		}
		statics, err := staticResources(f, svc, svcOpts, uris)
		if err != nil {
			return nil, err
		}
		s.statics = statics
		if len(s.tools)+len(s.prompts)+len(s.resources)+len(s.statics) > 0 {
			services = append(services, s)
		}
	}
	return services, nil
}

// newTool computes the tool of one rpc, or nil when the rpc is skipped.
func (c *config) newTool(f *protogen.File, svcOpts *mcpv1.ServiceOptions, m *protogen.Method) (*tool, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: rpc %s: %s", f.Desc.Path(), m.Desc.FullName(), fmt.Sprintf(format, args...))
	}
	methodOpts, _ := m.Desc.Options().(*descriptorpb.MethodOptions)
	opts, _ := proto.GetExtension(methodOpts, mcpv1.E_Tool).(*mcpv1.ToolOptions)
	if opts.GetSkip() {
		return nil, nil
	}
	const skipHint = "; mark it with option (mcp.v1.tool) = {skip: true} to leave it out"
	switch {
	case m.Desc.IsStreamingClient() && m.Desc.IsStreamingServer():
		return nil, fail("bidirectional streaming rpcs cannot be MCP tools (a tool call is one request and one result)%s", skipHint)
	case m.Desc.IsStreamingClient():
		return nil, fail("client-streaming rpcs cannot be MCP tools (a tool call has one request)%s", skipHint)
	case m.Desc.IsStreamingServer() && m.Output.Desc.FullName() == toolResultName:
		return nil, fail("a server-streaming rpc cannot stream %s: its messages are sent as structured progress, so stream a message of your own%s", toolResultName, skipHint)
	}

	t := &tool{
		Method:       m,
		constName:    m.Parent.GoName + m.GoName + "ToolName",
		schemaPrefix: unexport(m.Parent.GoName) + m.GoName,
		title:        opts.GetTitle(),
		description:  opts.GetDescription(),
		streaming:    m.Desc.IsStreamingServer(),
	}
	t.name = opts.GetName()
	if t.name == "" {
		t.name = svcOpts.GetToolNamePrefix() + snakeCase(string(m.Desc.Name()))
	}
	if !toolNamePattern.MatchString(t.name) {
		return nil, fail("tool name %q is invalid: it must match %s", t.name, toolNamePattern)
	}
	if t.description == "" {
		t.description = cleanComment(string(m.Comments.Leading))
	}
	if methodOpts.GetDeprecated() {
		t.description = join(t.description, "Deprecated.")
	}

	switch methodOpts.GetIdempotencyLevel() {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS:
		t.readOnly, t.idempotent = proto.Bool(true), proto.Bool(true)
	case descriptorpb.MethodOptions_IDEMPOTENT:
		t.idempotent = proto.Bool(true)
	}
	if opts != nil {
		if opts.ReadOnlyHint != nil {
			t.readOnly = opts.ReadOnlyHint
		}
		if opts.DestructiveHint != nil {
			t.destructive = opts.DestructiveHint
		}
		if opts.IdempotentHint != nil {
			t.idempotent = opts.IdempotentHint
		}
		if opts.OpenWorldHint != nil {
			t.openWorld = opts.OpenWorldHint
		}
		t.scopes = opts.GetScopes()
		for _, sc := range t.scopes {
			if !scopeTokenPattern.MatchString(sc) {
				return nil, fail("scope %q is invalid: an OAuth scope is one or more printable ASCII characters other than space, '\"' and '\\' (RFC 6749 Section 3.3)", sc)
			}
		}
	}

	in, err := messageSchema(m.Input.Desc, input)
	if err != nil {
		return nil, fail("arguments %s: %v", m.Input.Desc.FullName(), err)
	}
	t.inputSchema = in.String()
	t.validates = usesValidate(m.Input.Desc)
	if m.Output.Desc.FullName() != toolResultName {
		out, err := messageSchema(m.Output.Desc, output)
		if err != nil {
			return nil, fail("result %s: %v", m.Output.Desc.FullName(), err)
		}
		t.outputSchema = out.String()
	}
	for _, sc := range []struct{ which, text string }{{"input", t.inputSchema}, {"output", t.outputSchema}} {
		if c.maxSchemaBytes > 0 && len(sc.text) > c.maxSchemaBytes {
			return nil, fail("the %s schema is %d bytes, more than max_schema_bytes=%d: split the message, or raise the limit with the plugin parameter max_schema_bytes",
				sc.which, len(sc.text), c.maxSchemaBytes)
		}
	}
	return t, nil
}

func methodDeprecated(m *protogen.Method) bool {
	opts, _ := m.Desc.Options().(*descriptorpb.MethodOptions)
	return opts.GetDeprecated()
}

func generateFile(g *protogen.GeneratedFile, f *protogen.File, pkgName protogen.GoPackageName, services []*service, packageDoc bool) {
	g.P("// Code generated by protoc-gen-mcp. DO NOT EDIT.")
	g.P("// source: ", f.Desc.Path())
	g.P()
	if packageDoc {
		g.P("// Package ", pkgName, " is the MCP surface of the protobuf package ", f.Desc.Package(), ", generated by")
		g.P("// protoc-gen-mcp. For each service it holds a typed client (New...Client, over a")
		g.P("// runtime.Client), the handler interface to implement with its Unimplemented... struct")
		g.P("// and its Register...Handler function (for a runtime.Server), and the names and JSON")
		g.P("// Schemas of its tools, prompts and resources.")
	}
	g.P("package ", pkgName)
	g.P()
	g.P("// This is a compile-time assertion that this generated file and the protomcp runtime it")
	g.P("// is compiled against are compatible. If it fails, the code was generated by a newer")
	g.P("// protoc-gen-mcp than the runtime supports: update github.com/protomcp/protomcp or")
	g.P("// regenerate with a matching protoc-gen-mcp.")
	g.P("const _ = ", runtimePackage.Ident("SupportPackageIsVersion4"))
	g.P()
	for _, s := range services {
		generateService(g, s)
	}
}

// writeMethodDoc writes the doc comment of an interface method: the rpc's comment when it
// already starts with the method's name, as Go doc comments do, or a summary line and then
// the rpc's comment.
func writeMethodDoc(g *protogen.GeneratedFile, t *protogen.Method, summary string) {
	lines := commentLines(t.Comments.Leading)
	if len(lines) == 0 || !strings.HasPrefix(strings.TrimSpace(lines[0]), t.GoName+" ") {
		g.P("// ", t.GoName, " ", summary, ".")
		if len(lines) > 0 {
			g.P("//")
		}
	}
	for _, line := range lines {
		g.P("//", line)
	}
	if methodDeprecated(t) {
		g.P("//")
		g.P("// Deprecated: do not use.")
	}
}

// writeComments appends a proto comment to a doc comment, after an empty comment line.
func writeComments(g *protogen.GeneratedFile, c protogen.Comments) {
	lines := commentLines(c)
	if len(lines) == 0 {
		return
	}
	g.P("//")
	for _, line := range lines {
		g.P("//", line)
	}
}

// commentLines splits a proto comment into doc comment lines, without buf lint directives or
// surrounding blank lines.
func commentLines(c protogen.Comments) []string {
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(string(c), "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "buf:lint:") {
			continue
		}
		lines = append(lines, strings.TrimRight(line, " \t"))
	}
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// rawString is a Go raw string literal of s; backquotes, which a raw string cannot hold, are
// spliced in as interpreted strings.
func rawString(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "` + \"`\" + `") + "`"
}
