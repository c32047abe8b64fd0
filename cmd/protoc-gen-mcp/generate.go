package main

import (
	"cmp"
	"flag"
	"fmt"
	"path"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

const (
	contextPackage = protogen.GoImportPath("context")
	runtimePackage = protogen.GoImportPath("github.com/protomcp/protomcp/runtime")
	timePackage    = protogen.GoImportPath("time")
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
	grpc           bool
	connect        bool
	filter         filter
	// messages indexes the messages of the plugin's files, for operation_info's types.
	messages map[protoreflect.FullName]*protogen.Message
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
	flags.BoolVar(&c.grpc, "grpc", false,
		"also write <file>.mcp_grpc.go: Register<Service>GRPCServer, serving a grpc-go implementation through github.com/protomcp/protomcp/grpcmcp")
	c.filter.register(flags)
	flags.BoolVar(&c.connect, "connect", false,
		"also write <file>.mcp_connect.go: Register<Service>ConnectHandler, serving a connect-go implementation through github.com/protomcp/protomcp/connectmcp")
	return c
}

// service is one protobuf service and the tools it exposes.
type service struct {
	*protogen.Service
	tools     []*tool
	prompts   []*prompt
	resources []*resource
	statics   []*mcpv1.StaticResource // (mcp.v1.service).resources
	cache     *cacheHint              // (mcp.v1.service).cache_ttl_ms and cache_scope, or nil
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

	// rateLimits are the tool's token buckets: (mcp.v1.tool).rate_limit, then its service's
	// (mcp.v1.service).rate_limit.
	rateLimits []rateLimit
	// cache is the rpc's cache hint over its service's, or nil when it sets none.
	cache *cacheHint
	// taskSupport says whether the tool runs as an MCP task (task.go); never UNSPECIFIED.
	taskSupport mcpv1.TaskSupport
	// operation is google.longrunning.Operation when the rpc returns it; Method is then the
	// rpc as if it returned operation_info's response_type.
	operation *protogen.Message
	// metadata is operation_info's metadata_type of an Operation rpc that names one: its
	// client's handle decodes the task's metadata into it (task.go).
	metadata *protogen.Message
}

// generate writes the .mcp.go file of every file to generate that exposes something, and the
// grpc=true, connect=true and skeleton files the options ask for.
func (c *config) generate(gen *protogen.Plugin) error {
	gen.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL |
		pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	gen.SupportedEditionsMinimum = descriptorpb.Edition_EDITION_PROTO2
	gen.SupportedEditionsMaximum = descriptorpb.Edition_EDITION_2024

	pkgs := goPackages{tools: map[protogen.GoImportPath]map[string]string{}, idents: map[protogen.GoImportPath]map[string]string{}}
	return c.forEachExposing(gen, func(f *protogen.File, services []*service) error {
		return c.generateFor(gen, pkgs, f, services)
	})
}

// forEachExposing calls fn for each file to generate whose services expose something, with
// those services; the first error ends it.
func (c *config) forEachExposing(gen *protogen.Plugin, fn func(*protogen.File, []*service) error) error {
	c.messages = indexMessages(gen)
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
		if err := fn(f, services); err != nil {
			return err
		}
	}
	return nil
}

// generateFor writes the files of one proto file f, after deciding that its tools and Go
// identifiers do not collide with those of the files generated into its Go package so far.
func (c *config) generateFor(gen *protogen.Plugin, pkgs goPackages, f *protogen.File, services []*service) error {
	filename, importPath, pkgName := c.output(f)
	if err := pkgs.addTools(f, importPath, services); err != nil {
		return err
	}
	firstInPackage, err := pkgs.addIdents(gen, f, importPath, services, c.packageSuffix == "")
	if err != nil {
		return err
	}
	g := gen.NewGeneratedFile(filename, importPath)
	// A package of its own gets a package doc, on its first file only; beside the .pb.go
	// files the package is protoc-gen-go's.
	packageDoc := firstInPackage && c.packageSuffix != ""
	generateFile(g, f, pkgName, services, packageDoc)
	return c.generateCompanions(gen, f, filename, importPath, pkgName, services)
}

// generateCompanions writes the files beside filename that the options ask for: grpc=true,
// connect=true, skeleton.
func (c *config) generateCompanions(gen *protogen.Plugin, f *protogen.File, filename string, importPath protogen.GoImportPath, pkgName protogen.GoPackageName, services []*service) error {
	if c.grpc {
		generateGRPCFile(gen, f, filename, importPath, pkgName, services)
	}
	if c.connect {
		generateConnectFile(gen, f, filename, importPath, pkgName, services)
	}
	if c.skeleton {
		return generateSkeleton(gen, f, filename, importPath, pkgName, services)
	}
	return nil
}

// goPackages is what the files generated so far declare in each Go package, by import path.
type goPackages struct {
	// Tools generated into one Go package are likely registered on one server: their names
	// must not collide. By tool name, valued by the rpc that has it.
	tools map[protogen.GoImportPath]map[string]string
	// Likewise for the Go identifiers generated into one package, valued by their source.
	idents map[protogen.GoImportPath]map[string]string
}

// addTools adds the tools of a file's services to their Go package, whose other files must
// not have tools of the same names.
func (p goPackages) addTools(f *protogen.File, importPath protogen.GoImportPath, services []*service) error {
	names := p.tools[importPath]
	if names == nil {
		names = map[string]string{}
		p.tools[importPath] = names
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
	return nil
}

// addIdents adds the Go identifiers generated for a file's services to their Go package,
// where they must be new, and reports whether the file is the package's first. Beside the
// .pb.go files (besidePB), protoc-gen-go's identifiers are the package's too.
func (p goPackages) addIdents(gen *protogen.Plugin, f *protogen.File, importPath protogen.GoImportPath, services []*service, besidePB bool) (first bool, err error) {
	idents := p.idents[importPath]
	first = idents == nil
	if first {
		idents = packageProtoIdents(gen, importPath, besidePB)
		p.idents[importPath] = idents
	}
	for _, s := range services {
		for _, id := range s.goIdents(f) {
			if other, ok := idents[id.name]; ok {
				return false, fmt.Errorf("%s: %s: the generated Go identifier %s collides with %s, in Go package %s: rename one of them, or generate into another package (package_suffix)",
					f.Desc.Path(), id.source, id.name, other, importPath)
			}
			idents[id.name] = id.source + " (" + f.Desc.Path() + ")"
		}
	}
	return first, nil
}

// packageProtoIdents is the identifiers a Go package has before the plugin adds its own:
// those protoc-gen-go declares there when the generated code goes beside the .pb.go files
// (besidePB), else none.
func packageProtoIdents(gen *protogen.Plugin, importPath protogen.GoImportPath, besidePB bool) map[string]string {
	idents := map[string]string{}
	if !besidePB {
		return idents
	}
	for _, other := range gen.Files {
		if other.GoImportPath == importPath {
			protoGoIdents(other, idents)
		}
	}
	return idents
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
		ids = append(ids, t.goIdents()...)
	}
	for _, p := range s.prompts {
		ids = append(ids, methodIdents(p.Method, p.constName, len(p.args) > 0)...)
	}
	for _, r := range s.resources {
		ids = append(ids, methodIdents(r.Method, r.constName, r.uriTemplate != "")...)
	}
	return ids
}

// goIdents lists the package-level identifiers generated for a tool: its name constant and
// its schemas.
func (t *tool) goIdents() []goIdent {
	rpc := "rpc " + string(t.Desc.FullName())
	ids := []goIdent{{t.constName, rpc}, {t.schemaPrefix + "InputSchema", rpc}}
	if t.outputSchema != "" {
		ids = append(ids, goIdent{t.schemaPrefix + "OutputSchema", rpc})
	}
	return ids
}

// methodIdents lists the package-level identifiers generated for a prompt's or resource's
// rpc m: its constant (constName), and its Completer interface when it completes.
func methodIdents(m *protogen.Method, constName string, completes bool) []goIdent {
	rpc := "rpc " + string(m.Desc.FullName())
	ids := []goIdent{{constName, rpc}}
	if completes {
		ids = append(ids, goIdent{m.Parent.GoName + m.GoName + "Completer", rpc})
	}
	return ids
}

// protoGoIdents adds the package-level identifiers that protoc-gen-go declares for f.
func protoGoIdents(f *protogen.File, idents map[string]string) {
	from := " (" + f.Desc.Path() + ", protoc-gen-go)"
	idents[f.GoDescriptorIdent.GoName] = "the descriptor of " + f.Desc.Path() + from
	for _, e := range f.Enums {
		protoEnumIdents(e, from, idents)
	}
	for _, x := range f.Extensions {
		idents["E_"+x.GoIdent.GoName] = "extension " + string(x.Desc.FullName()) + from
	}
	for _, m := range f.Messages {
		protoMessageIdents(m, from, idents)
	}
}

// protoEnumIdents adds the identifiers protoc-gen-go declares for an enum: its type, its
// name and value maps, and a constant per value.
func protoEnumIdents(e *protogen.Enum, from string, idents map[string]string) {
	what := "enum " + string(e.Desc.FullName()) + from
	idents[e.GoIdent.GoName] = what
	idents[e.GoIdent.GoName+"_name"] = what
	idents[e.GoIdent.GoName+"_value"] = what
	for _, v := range e.Values {
		idents[v.GoIdent.GoName] = "enum value " + string(v.Desc.FullName()) + from
	}
}

// protoMessageIdents adds the identifiers protoc-gen-go declares for a message and those
// nested in it: its type, a wrapper type per oneof field, its enums and extensions.
func protoMessageIdents(m *protogen.Message, from string, idents map[string]string) {
	if m.Desc.IsMapEntry() {
		return // protoc-gen-go declares no type for map entries
	}
	idents[m.GoIdent.GoName] = "message " + string(m.Desc.FullName()) + from
	oneofFieldIdents(m, from, idents)
	for _, e := range m.Enums {
		protoEnumIdents(e, from, idents)
	}
	for _, x := range m.Extensions {
		idents["E_"+x.GoIdent.GoName] = "extension " + string(x.Desc.FullName()) + from
	}
	for _, n := range m.Messages {
		protoMessageIdents(n, from, idents)
	}
}

// oneofFieldIdents adds the wrapper type protoc-gen-go declares for each member of a real
// (not synthetic) oneof of m.
func oneofFieldIdents(m *protogen.Message, from string, idents map[string]string) {
	for _, fd := range m.Fields {
		if fd.Oneof != nil && !fd.Oneof.Desc.IsSynthetic() {
			idents[fd.GoIdent.GoName] = "oneof field " + string(fd.Desc.FullName()) + from
		}
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
	seen := fileNames{tools: map[string]string{}, prompts: map[string]string{}, uris: map[string]string{}}
	for _, svc := range f.Services {
		s := &service{Service: svc}
		svcOpts, _ := proto.GetExtension(svc.Desc.Options(), mcpv1.E_Service).(*mcpv1.ServiceOptions)
		var err error
		if s.cache, err = serviceCacheHint(svcOpts); err != nil {
			return nil, fmt.Errorf("%s: service %s: %w", f.Desc.Path(), svc.Desc.FullName(), err)
		}
		for _, m := range svc.Methods {
			if err := c.addMethod(f, s, svcOpts, m, seen); err != nil {
				return nil, err
			}
		}
		statics, err := staticResources(f, svc, svcOpts, seen.uris)
		if err != nil {
			return nil, err
		}
		s.statics = statics
		if why := s.taskMethodClash(); why != "" {
			return nil, fmt.Errorf("%s: service %s: %s", f.Desc.Path(), svc.Desc.FullName(), why)
		}
		if len(s.tools)+len(s.prompts)+len(s.resources)+len(s.statics) > 0 {
			services = append(services, s)
		}
	}
	return services, nil
}

// fileNames are the names a file's services have used so far, each mapped to the rpc that
// has it: they must be unique within the file.
type fileNames struct {
	tools   map[string]string // tool name -> rpc, across the file's services
	prompts map[string]string // prompt name -> rpc
	uris    map[string]string // resource URI or URI template -> rpc
}

// addMethod adds an rpc to its service as what its options make it: a prompt, a resource, a
// tool, or nothing when it is skipped.
func (c *config) addMethod(f *protogen.File, s *service, svcOpts *mcpv1.ServiceOptions, m *protogen.Method, seen fileNames) error {
	fail := methodFail(f, m)
	toolOpts, promptOpts, resourceOpts := methodKind(m)
	if !c.filter.selects(m) || toolOpts.GetSkip() {
		return nil
	}
	if why := kindConflict(toolOpts, promptOpts, resourceOpts); why != "" {
		return fail("an rpc is a tool, a prompt or a resource: %s", why)
	}
	switch {
	case promptOpts != nil:
		return seen.addPrompt(f, s, m, promptOpts)
	case resourceOpts != nil:
		return seen.addResource(f, s, m, resourceOpts)
	}
	return c.addTool(f, s, svcOpts, m, seen)
}

// addTool adds a tool rpc to its service unless it is skipped or filtered out; its name must
// be new to the file.
func (c *config) addTool(f *protogen.File, s *service, svcOpts *mcpv1.ServiceOptions, m *protogen.Method, seen fileNames) error {
	t, err := c.newTool(f, svcOpts, m)
	if err != nil || t == nil {
		return err
	}
	if !c.filter.selectsTool(t) {
		return nil
	}
	c.filter.warnUndocumented(f, t)
	if other, ok := seen.tools[t.name]; ok {
		return methodFail(f, m)("tool name %q is already used by rpc %s", t.name, other)
	}
	seen.tools[t.name] = string(m.Desc.FullName())
	s.tools = append(s.tools, t)
	return nil
}

// kindConflict says which of an rpc's options contradict each other (it is one of a tool, a
// prompt or a resource), or "". A skipped tool conflicts with nothing.
func kindConflict(toolOpts *mcpv1.ToolOptions, promptOpts *mcpv1.PromptOptions, resourceOpts *mcpv1.ResourceOptions) string {
	switch {
	case toolOpts.GetSkip():
		return ""
	case promptOpts != nil && resourceOpts != nil:
		return "it cannot have both (mcp.v1.prompt) and (mcp.v1.resource)"
	case (promptOpts != nil || resourceOpts != nil) && toolOpts != nil:
		return "(mcp.v1.tool) cannot be combined with (mcp.v1.prompt) or (mcp.v1.resource)"
	}
	return ""
}

// addPrompt adds a prompt rpc to its service; its name must be new to the file.
func (seen fileNames) addPrompt(f *protogen.File, s *service, m *protogen.Method, opts *mcpv1.PromptOptions) error {
	p, err := newPrompt(f, m, opts)
	if err != nil {
		return err
	}
	if other, ok := seen.prompts[p.name]; ok {
		return methodFail(f, m)("prompt name %q is already used by rpc %s", p.name, other)
	}
	seen.prompts[p.name] = string(m.Desc.FullName())
	s.prompts = append(s.prompts, p)
	return nil
}

// addResource adds a resource rpc to its service; its URI or URI template must be new to the
// file.
func (seen fileNames) addResource(f *protogen.File, s *service, m *protogen.Method, opts *mcpv1.ResourceOptions) error {
	r, err := newResource(f, m, opts)
	if err != nil {
		return err
	}
	key := r.uri + r.uriTemplate
	if other, ok := seen.uris[key]; ok {
		return methodFail(f, m)("resource %q is already served by rpc %s", key, other)
	}
	seen.uris[key] = string(m.Desc.FullName())
	s.resources = append(s.resources, r)
	return nil
}

// newTool computes the tool of one rpc, or nil when the rpc is skipped.
func (c *config) newTool(f *protogen.File, svcOpts *mcpv1.ServiceOptions, m *protogen.Method) (*tool, error) {
	fail := methodFail(f, m)
	methodOpts, _ := m.Desc.Options().(*descriptorpb.MethodOptions)
	opts, _ := proto.GetExtension(methodOpts, mcpv1.E_Tool).(*mcpv1.ToolOptions)
	if opts.GetSkip() {
		return nil, nil
	}
	if why := streamingProblem(m); why != "" {
		return nil, fail("%s; mark it with option (mcp.v1.tool) = {skip: true} to leave it out", why)
	}

	t := &tool{
		Method:       m,
		constName:    m.Parent.GoName + m.GoName + "ToolName",
		schemaPrefix: unexport(m.Parent.GoName) + m.GoName,
		name:         cmp.Or(opts.GetName(), svcOpts.GetToolNamePrefix()+snakeCase(string(m.Desc.Name()))),
		title:        opts.GetTitle(),
		description:  cmp.Or(opts.GetDescription(), cleanComment(string(m.Comments.Leading))),
		streaming:    m.Desc.IsStreamingServer(),
		scopes:       opts.GetScopes(),
	}
	t.name = c.filter.toolPrefix + t.name
	if !toolNamePattern.MatchString(t.name) {
		return nil, fail("tool name %q is invalid: it must match %s", t.name, toolNamePattern)
	}
	if methodOpts.GetDeprecated() {
		t.description = join(t.description, "Deprecated.")
	}
	t.annotate(methodOpts.GetIdempotencyLevel(), opts)
	if err := taskTool(f, t, methodOpts, opts, c.messages); err != nil {
		return nil, err
	}
	if err := checkScopes(t.scopes); err != nil {
		return nil, fail("%v", err)
	}
	var err error
	if t.cache, err = toolCacheHint(svcOpts, opts); err != nil {
		return nil, fail("%v", err)
	}
	rls, err := rateLimits(m, opts.GetRateLimit(), svcOpts.GetRateLimit())
	if err != nil {
		return nil, fail("%v", err)
	}
	t.rateLimits = rls
	if err := c.schemas(t); err != nil {
		return nil, fail("%v", err)
	}
	return t, nil
}

// checkScopes refuses a scope that is not an OAuth scope-token.
func checkScopes(scopes []string) error {
	for _, sc := range scopes {
		if !scopeTokenPattern.MatchString(sc) {
			return fmt.Errorf("scope %q is invalid: an OAuth scope is one or more printable ASCII characters other than space, '\"' and '\\' (RFC 6749 Section 3.3)", sc)
		}
	}
	return nil
}

// streamingProblem says why an rpc's streaming keeps it from being a tool, or "".
func streamingProblem(m *protogen.Method) string {
	switch {
	case m.Desc.IsStreamingClient() && m.Desc.IsStreamingServer():
		return "bidirectional streaming rpcs cannot be MCP tools (a tool call is one request and one result)"
	case m.Desc.IsStreamingClient():
		return "client-streaming rpcs cannot be MCP tools (a tool call has one request)"
	case m.Desc.IsStreamingServer() && m.Output.Desc.FullName() == toolResultName:
		return fmt.Sprintf("a server-streaming rpc cannot stream %s: its messages are sent as structured progress, so stream a message of your own", toolResultName)
	}
	return ""
}

// annotate sets the tool's behaviour hints: from the rpc's idempotency level, then from the
// hints set explicitly in (mcp.v1.tool), which win.
func (t *tool) annotate(level descriptorpb.MethodOptions_IdempotencyLevel, opts *mcpv1.ToolOptions) {
	switch level {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS:
		t.readOnly, t.idempotent = proto.Bool(true), proto.Bool(true)
	case descriptorpb.MethodOptions_IDEMPOTENT:
		t.idempotent = proto.Bool(true)
	}
	if opts == nil {
		return
	}
	for _, hint := range []struct {
		set *bool
		to  **bool
	}{
		{opts.ReadOnlyHint, &t.readOnly},
		{opts.DestructiveHint, &t.destructive},
		{opts.IdempotentHint, &t.idempotent},
		{opts.OpenWorldHint, &t.openWorld},
	} {
		if hint.set != nil {
			*hint.to = hint.set
		}
	}
}

// schemas computes the tool's input and output schemas (none for mcp.v1.ToolResult) and
// checks them against max_schema_bytes.
func (c *config) schemas(t *tool) error {
	m := t.Method
	in, err := messageSchema(m.Input.Desc, input)
	if err != nil {
		return fmt.Errorf("arguments %s: %w", m.Input.Desc.FullName(), err)
	}
	t.inputSchema = in.String()
	t.validates = usesValidate(m.Input.Desc)
	if m.Output.Desc.FullName() != toolResultName {
		out, err := messageSchema(m.Output.Desc, output)
		if err != nil {
			return fmt.Errorf("result %s: %w", m.Output.Desc.FullName(), err)
		}
		t.outputSchema = out.String()
	}
	for _, sc := range []struct{ which, text string }{{"input", t.inputSchema}, {"output", t.outputSchema}} {
		if c.maxSchemaBytes > 0 && len(sc.text) > c.maxSchemaBytes {
			return fmt.Errorf("the %s schema is %d bytes, more than max_schema_bytes=%d: split the message, or raise the limit with the plugin parameter max_schema_bytes",
				sc.which, len(sc.text), c.maxSchemaBytes)
		}
	}
	return nil
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
	return trimBlankLines(lines)
}

// trimBlankLines drops the blank lines at the start and the end of lines.
func trimBlankLines(lines []string) []string {
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
