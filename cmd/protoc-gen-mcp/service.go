package main

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/types/descriptorpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// serviceGen writes the code of one service into a generated file. Each method writes one
// piece, in the order the file holds them: the name constants, the client, the handler
// interface, the Unimplemented handler, the registration function and the schema constants.
type serviceGen struct {
	g *protogen.GeneratedFile
	s *service
	// name is the service's Go name, the prefix of every generated identifier.
	name string
	// ctx and callOption are context.Context and runtime.CallOption, qualified for g.
	ctx, callOption string
	// deprecated is set when the service is deprecated: every exported declaration says so.
	deprecated bool
}

// generateService writes the code of s.
func generateService(g *protogen.GeneratedFile, s *service) {
	sg := &serviceGen{g: g, s: s, name: s.GoName}
	sg.ctx = g.QualifiedGoIdent(contextPackage.Ident("Context"))
	if opts, ok := s.Desc.Options().(*descriptorpb.ServiceOptions); ok && opts.GetDeprecated() {
		sg.deprecated = true
	}
	sg.nameConstants()
	sg.callOption = g.QualifiedGoIdent(runtimePackage.Ident("CallOption"))
	sg.clientInterface()
	sg.handleTypes()
	sg.clientImplementation()
	sg.handlerInterface()
	sg.unimplementedHandler()
	generateCompleters(g, s)
	sg.registerFunc()
	sg.schemaConstants()
}

// deprecation ends the doc comment of a service-level declaration of a deprecated service.
func (sg *serviceGen) deprecation() {
	if sg.deprecated {
		sg.g.P("//")
		sg.g.P("// Deprecated: do not use.")
	}
}

// methodDeprecation ends the doc comment of a constant of a deprecated rpc.
func (sg *serviceGen) methodDeprecation(m *protogen.Method) {
	if methodDeprecated(m) {
		sg.g.P("//")
		sg.g.P("// Deprecated: do not use.")
	}
}

// in and out return an rpc's request and response types, qualified for the file.
func (sg *serviceGen) in(m *protogen.Method) string  { return sg.g.QualifiedGoIdent(m.Input.GoIdent) }
func (sg *serviceGen) out(m *protogen.Method) string { return sg.g.QualifiedGoIdent(m.Output.GoIdent) }

// clientSignature is the signature of a tool's client method.
func (sg *serviceGen) clientSignature(t *tool) string {
	prefix := t.GoName + "(ctx " + sg.ctx + ", req *" + sg.in(t.Method) + ", opts ..." + sg.callOption + ") "
	if t.streaming {
		return prefix + "*" + sg.g.QualifiedGoIdent(runtimePackage.Ident("ToolStream")) + "[" + sg.out(t.Method) + "]"
	}
	return prefix + "(*" + sg.out(t.Method) + ", error)"
}

// startSignature is the signature of a task tool's Start client method.
func (sg *serviceGen) startSignature(t *tool) string {
	return "Start" + t.GoName + "(ctx " + sg.ctx + ", req *" + sg.in(t.Method) + ", opts ..." + sg.callOption + ") (*" + sg.handle(t) + ", error)"
}

// resumeSignature is the signature of a task tool's Resume client method.
func (sg *serviceGen) resumeSignature(t *tool) string {
	return "Resume" + t.GoName + "(taskID string) *" + sg.handle(t)
}

// handle is runtime.TaskHandle of a task tool's result, qualified for the file, or the
// handle type of an Operation rpc with a metadata_type (handleType).
func (sg *serviceGen) handle(t *tool) string {
	if t.metadata != nil {
		return sg.handleType(t)
	}
	return sg.g.QualifiedGoIdent(runtimePackage.Ident("TaskHandle")) + "[" + sg.out(t.Method) + "]"
}

// taskClientMethods writes the Start and Resume methods of a task tool's client.
func (sg *serviceGen) taskClientMethods(clientType string, t *tool) {
	g := sg.g
	g.P("// Start", t.GoName, " calls the ", t.name, " tool as a task and returns a handle to it.")
	g.P("func (c *", clientType, ") ", sg.startSignature(t), " {")
	if t.metadata != nil {
		g.P("h, err := ", runtimePackage.Ident("StartTypedTask"), "[", t.Output.GoIdent, "](ctx, c.client, ", t.constName, ", req, opts...)")
		g.P("if err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("return &", sg.handleType(t), "{TaskHandle: h}, nil")
	} else {
		g.P("return ", runtimePackage.Ident("StartTypedTask"), "[", t.Output.GoIdent, "](ctx, c.client, ", t.constName, ", req, opts...)")
	}
	g.P("}")
	g.P()
	g.P("// Resume", t.GoName, " returns a handle to the ", t.name, " task taskID.")
	g.P("func (c *", clientType, ") ", sg.resumeSignature(t), " {")
	if t.metadata != nil {
		g.P("return &", sg.handleType(t), "{TaskHandle: ", runtimePackage.Ident("ResumeTypedTask"), "[", t.Output.GoIdent, "](c.client, ", t.constName, ", taskID)}")
	} else {
		g.P("return ", runtimePackage.Ident("ResumeTypedTask"), "[", t.Output.GoIdent, "](c.client, ", t.constName, ", taskID)")
	}
	g.P("}")
	g.P()
}

// handlerSignature is the signature of a tool's handler method.
func (sg *serviceGen) handlerSignature(t *tool) string {
	if t.streaming {
		return t.GoName + "(" + sg.ctx + ", *" + sg.in(t.Method) + ", *" + sg.g.QualifiedGoIdent(runtimePackage.Ident("ServerStream")) + "[" + sg.out(t.Method) + "]) error"
	}
	return t.GoName + "(" + sg.ctx + ", *" + sg.in(t.Method) + ") (*" + sg.out(t.Method) + ", error)"
}

// plainSignature is the signature of a prompt's or resource's handler method.
func (sg *serviceGen) plainSignature(m *protogen.Method) string {
	return m.GoName + "(" + sg.ctx + ", *" + sg.in(m) + ") (*" + sg.out(m) + ", error)"
}

// callSignature is the signature of a prompt's or resource's client method.
func (sg *serviceGen) callSignature(m *protogen.Method) string {
	return m.GoName + "(ctx " + sg.ctx + ", req *" + sg.in(m) + ", opts ..." + sg.callOption + ") (*" + sg.out(m) + ", error)"
}

// nameConstants writes the service's name and the names of its tools and prompts and the
// URIs of its resources.
func (sg *serviceGen) nameConstants() {
	g, s := sg.g, sg.s
	g.P("// ", sg.name, "Name is the fully-qualified name of the ", s.Desc.Name(), " service.")
	g.P("const ", sg.name, "Name = ", strconv.Quote(string(s.Desc.FullName())))
	g.P()
	if len(s.tools) > 0 {
		sg.toolConstants()
	}
	if len(s.prompts) > 0 {
		sg.promptConstants()
	}
	if len(s.resources) > 0 {
		sg.resourceConstants()
	}
}

// toolConstants writes the constants of the service's tool names.
func (sg *serviceGen) toolConstants() {
	g := sg.g
	g.P("// These constants are the MCP tool names of the ", sg.s.Desc.Name(), " service's rpcs.")
	g.P("const (")
	for _, t := range sg.s.tools {
		g.P("// ", t.constName, " is the tool name of ", t.Desc.FullName(), ".")
		sg.methodDeprecation(t.Method)
		g.P(t.constName, " = ", strconv.Quote(t.name))
	}
	g.P(")")
	g.P()
}

// promptConstants writes the constants of the service's prompt names.
func (sg *serviceGen) promptConstants() {
	g := sg.g
	g.P("// These constants are the MCP prompt names of the ", sg.s.Desc.Name(), " service's rpcs.")
	g.P("const (")
	for _, p := range sg.s.prompts {
		g.P("// ", p.constName, " is the prompt name of ", p.Desc.FullName(), ".")
		sg.methodDeprecation(p.Method)
		g.P(p.constName, " = ", strconv.Quote(p.name))
	}
	g.P(")")
	g.P()
}

// resourceConstants writes the constants of the service's resource URI templates and URIs.
func (sg *serviceGen) resourceConstants() {
	g := sg.g
	g.P("// These constants are the resource URI templates and URIs of the ", sg.s.Desc.Name(), " service's rpcs.")
	g.P("const (")
	for _, r := range sg.s.resources {
		if r.uriTemplate != "" {
			g.P("// ", r.constName, " is the URI template of the resource ", r.Desc.FullName(), " reads.")
			sg.methodDeprecation(r.Method)
			g.P(r.constName, " = ", strconv.Quote(r.uriTemplate))
		} else {
			g.P("// ", r.constName, " is the URI of the resource ", r.Desc.FullName(), " reads.")
			sg.methodDeprecation(r.Method)
			g.P(r.constName, " = ", strconv.Quote(r.uri))
		}
	}
	g.P(")")
	g.P()
}

// clientInterface writes the <Service>Client interface.
func (sg *serviceGen) clientInterface() {
	g, s := sg.g, sg.s
	g.P("// ", sg.name, "Client calls the ", s.surface(), " of ", s.Desc.FullName(), " on an MCP server.")
	writeComments(g, s.Comments.Leading)
	sg.deprecation()
	g.P("type ", sg.name, "Client interface {")
	for _, t := range s.tools {
		summary := "calls the " + t.name + " tool"
		if t.streaming {
			summary += " and streams its messages"
		}
		if t.taskSupport == mcpv1.TaskSupport_TASK_SUPPORT_REQUIRED {
			summary += " as a task and waits for its result"
		}
		writeMethodDoc(g, t.Method, summary)
		g.P(sg.clientSignature(t))
		if t.isTask() {
			g.P("// Start", t.GoName, " calls the ", t.name, " tool as a task and returns a handle to it, without")
			g.P("// waiting for its result.")
			g.P(sg.startSignature(t))
			g.P("// Resume", t.GoName, " returns a handle to the ", t.name, " task taskID, started earlier.")
			g.P(sg.resumeSignature(t))
		}
	}
	for _, p := range s.prompts {
		writeMethodDoc(g, p.Method, "renders the "+p.name+" prompt")
		g.P(sg.callSignature(p.Method))
	}
	for _, r := range s.resources {
		writeMethodDoc(g, r.Method, "reads the resource "+r.uri+r.uriTemplate)
		g.P(sg.callSignature(r.Method))
	}
	g.P("}")
	g.P()
}

// clientImplementation writes New<Service>Client and the unexported type it returns, whose
// methods call the runtime's generic client functions.
func (sg *serviceGen) clientImplementation() {
	g, s, name := sg.g, sg.s, sg.name
	clientType := unexport(name) + "Client"
	g.P("// New", name, "Client returns a ", name, "Client that calls the server through c.")
	sg.deprecation()
	g.P("func New", name, "Client(c *", runtimePackage.Ident("Client"), ") ", name, "Client {")
	g.P("return &", clientType, "{client: c}")
	g.P("}")
	g.P()
	g.P("// ", clientType, " implements ", name, "Client.")
	g.P("type ", clientType, " struct {")
	g.P("client *", runtimePackage.Ident("Client"))
	g.P("}")
	g.P()
	for _, t := range s.tools {
		if t.streaming {
			g.P("// ", t.GoName, " calls the ", t.name, " tool and streams its messages.")
			g.P("func (c *", clientType, ") ", sg.clientSignature(t), " {")
			g.P("return ", runtimePackage.Ident("CallToolStream"), "[", t.Output.GoIdent, "](ctx, c.client, ", t.constName, ", req, opts...)")
		} else if t.taskSupport == mcpv1.TaskSupport_TASK_SUPPORT_REQUIRED {
			g.P("// ", t.GoName, " calls the ", t.name, " tool as a task and waits for its result.")
			g.P("func (c *", clientType, ") ", sg.clientSignature(t), " {")
			g.P("return ", runtimePackage.Ident("RunTypedTask"), "[", t.Output.GoIdent, "](ctx, c.client, ", t.constName, ", req, opts...)")
		} else {
			g.P("// ", t.GoName, " calls the ", t.name, " tool.")
			g.P("func (c *", clientType, ") ", sg.clientSignature(t), " {")
			g.P("return ", runtimePackage.Ident("CallTypedTool"), "[", t.Output.GoIdent, "](ctx, c.client, ", t.constName, ", req, opts...)")
		}
		g.P("}")
		g.P()
		if t.isTask() {
			sg.taskClientMethods(clientType, t)
		}
	}
	for _, p := range s.prompts {
		g.P("// ", p.GoName, " renders the ", p.name, " prompt.")
		g.P("func (c *", clientType, ") ", sg.callSignature(p.Method), " {")
		g.P("return ", runtimePackage.Ident("GetTypedPrompt"), "(ctx, c.client, ", p.constName, ", req, opts...)")
		g.P("}")
		g.P()
	}
	for _, r := range s.resources {
		g.P("// ", r.GoName, " reads the resource ", r.uri+r.uriTemplate, ".")
		g.P("func (c *", clientType, ") ", sg.callSignature(r.Method), " {")
		g.P("return ", runtimePackage.Ident("ReadTypedResource"), "[", r.Output.GoIdent, "](ctx, c.client, ", r.constName, ", req, opts...)")
		g.P("}")
		g.P()
	}
}

// handlerInterface writes the <Service>Handler interface that servers implement.
func (sg *serviceGen) handlerInterface() {
	g, s := sg.g, sg.s
	g.P("// ", sg.name, "Handler implements the ", s.surface(), " of ", s.Desc.FullName(), ".")
	writeComments(g, s.Comments.Leading)
	sg.deprecation()
	g.P("type ", sg.name, "Handler interface {")
	for _, t := range s.tools {
		summary := "handles the " + t.name + " tool"
		if t.streaming {
			summary += ", sending its messages on the stream"
		}
		writeMethodDoc(g, t.Method, summary)
		g.P(sg.handlerSignature(t))
	}
	for _, p := range s.prompts {
		writeMethodDoc(g, p.Method, "renders the "+p.name+" prompt")
		g.P(sg.plainSignature(p.Method))
	}
	for _, r := range s.resources {
		writeMethodDoc(g, r.Method, "reads the resource "+r.uri+r.uriTemplate)
		g.P(sg.plainSignature(r.Method))
	}
	g.P("}")
	g.P()
}

// unimplementedHandler writes Unimplemented<Service>Handler, whose every method reports that
// it is not implemented.
func (sg *serviceGen) unimplementedHandler() {
	g, s, name := sg.g, sg.s, sg.name
	g.P("// Unimplemented", name, "Handler returns an error from every method. Embed it in a")
	g.P("// ", name, "Handler to stay compatible with services that gain rpcs; the Register")
	g.P("// function leaves out the rpcs that only it serves, so that clients are never offered them.")
	g.P("type Unimplemented", name, "Handler struct{}")
	g.P()
	for _, t := range s.tools {
		g.P("// ", t.GoName, " reports that the ", t.name, " tool is not implemented.")
		g.P("func (Unimplemented", name, "Handler) ", sg.handlerSignature(t), " {")
		if t.streaming {
			g.P("return ", runtimePackage.Ident("Unimplemented"), "(", t.constName, ")")
		} else {
			g.P("return nil, ", runtimePackage.Ident("Unimplemented"), "(", t.constName, ")")
		}
		g.P("}")
		g.P()
	}
	for _, p := range s.prompts {
		g.P("// ", p.GoName, " reports that the ", p.name, " prompt is not implemented.")
		g.P("func (Unimplemented", name, "Handler) ", sg.plainSignature(p.Method), " {")
		g.P("return nil, ", runtimePackage.Ident("UnimplementedPrompt"), "(", p.constName, ")")
		g.P("}")
		g.P()
	}
	for _, r := range s.resources {
		g.P("// ", r.GoName, " reports that the resource ", r.uri+r.uriTemplate, " is not implemented.")
		g.P("func (Unimplemented", name, "Handler) ", sg.plainSignature(r.Method), " {")
		g.P("return nil, ", runtimePackage.Ident("UnimplementedResource"), "(", r.constName, ")")
		g.P("}")
		g.P()
	}
}

// registerFunc writes Register<Service>Handler, which adds each rpc that h implements to a
// server.
func (sg *serviceGen) registerFunc() {
	g, s, name := sg.g, sg.s, sg.name
	methods := s.quotedMethods()
	g.P("// Register", name, "Handler adds the ", s.surface(), " of ", s.Desc.FullName(), " to s, each")
	g.P("// served by the method of h of the same name, leaving out those that h serves with an embedded")
	g.P("// Unimplemented", name, "Handler. Options such as runtime.WithInterceptors apply to these only.")
	g.P("// It panics if s already has a tool, prompt or resource of one of these names.")
	sg.deprecation()
	g.P("func Register", name, "Handler(s *", runtimePackage.Ident("Server"), ", h ", name, "Handler, opts ...", runtimePackage.Ident("HandlerOption"), ") {")
	serviceCacheOption(g, s.cache)
	if len(methods) > 0 {
		g.P("unimplemented := ", runtimePackage.Ident("UnimplementedMethods"), "(h, Unimplemented", name, "Handler{}, ", strings.Join(methods, ", "), ")")
	}
	for _, t := range s.tools {
		g.P("if !unimplemented[", strconv.Quote(t.GoName), "] {")
		sg.toolRegistration(t)
		g.P("}")
	}
	for _, p := range s.prompts {
		g.P("if !unimplemented[", strconv.Quote(p.GoName), "] {")
		generatePromptRegistration(g, name, p)
		g.P("}")
	}
	for _, r := range s.resources {
		g.P("if !unimplemented[", strconv.Quote(r.GoName), "] {")
		generateResourceRegistration(g, name, r)
		g.P("}")
	}
	generateStaticResources(g, s)
	g.P("}")
	g.P()
}

// quotedMethods is the Go names, quoted, of the service's tools, prompts and resources, in
// that order.
func (s *service) quotedMethods() []string {
	var methods []string
	for _, t := range s.tools {
		methods = append(methods, strconv.Quote(t.GoName))
	}
	for _, p := range s.prompts {
		methods = append(methods, strconv.Quote(p.GoName))
	}
	for _, r := range s.resources {
		methods = append(methods, strconv.Quote(r.GoName))
	}
	return methods
}

// toolRegistration writes the runtime.AddTypedTool (or AddStreamTool) call of one tool, with its
// ToolSpec.
func (sg *serviceGen) toolRegistration(t *tool) {
	g := sg.g
	add := "AddTypedTool"
	if t.streaming {
		add = "AddStreamTool"
	}
	g.P(runtimePackage.Ident(add), "(s, ", runtimePackage.Ident("ToolSpec"), "{")
	g.P("Name: ", t.constName, ",")
	stringField(g, "Title", t.title)
	stringField(g, "Description", t.description)
	g.P("InputSchema: ", t.schemaPrefix, "InputSchema,")
	if t.outputSchema != "" {
		g.P("OutputSchema: ", t.schemaPrefix, "OutputSchema,")
	}
	validateSpecField(g, t.validates)
	annotationsField(g, t)
	scopesField(g, t.scopes)
	rateLimitsField(g, t.rateLimits)
	cacheField(g, t.cache)
	if id := t.taskSupportIdent(); id != "" {
		g.P("TaskSupport: ", runtimePackage.Ident(id), ",")
	}
	rpcMetaField(g, t.Method)
	g.P("}, h.", t.GoName, ", opts...)")
}

// rpcMetaField writes a spec's Meta field naming the rpc m under runtime.RPCMetaKey, so
// tools/list (prompts/list, resources/list, resources/templates/list) shows a client the rpc
// behind the tool, prompt or resource (spec 2025-11-25, basic "_meta").
func rpcMetaField(g *protogen.GeneratedFile, m *protogen.Method) {
	rpc := string(m.Parent.Desc.FullName()) + "/" + string(m.Desc.Name())
	g.P("Meta: map[string]any{", runtimePackage.Ident("RPCMetaKey"), ": ", strconv.Quote(rpc), "},")
}

// validateSpecField writes a spec's Validate field when its request has buf.validate rules.
func validateSpecField(g *protogen.GeneratedFile, validates bool) {
	if validates {
		g.P("Validate: ", bufvalidatePackage.Ident("Validate"), ",")
	}
}

// annotationsField writes a ToolSpec's Annotations field with the hints t sets, when it sets
// any.
func annotationsField(g *protogen.GeneratedFile, t *tool) {
	if t.readOnly == nil && t.destructive == nil && t.idempotent == nil && t.openWorld == nil {
		return
	}
	g.P("Annotations: &", runtimePackage.Ident("ToolAnnotations"), "{")
	hintField(g, "ReadOnlyHint", t.readOnly)
	hintField(g, "DestructiveHint", t.destructive)
	hintField(g, "IdempotentHint", t.idempotent)
	hintField(g, "OpenWorldHint", t.openWorld)
	g.P("},")
}

// hintField writes one hint of ToolAnnotations when it is set.
func hintField(g *protogen.GeneratedFile, field string, v *bool) {
	if v != nil {
		g.P(field, ": ", runtimePackage.Ident("Bool"), "(", *v, "),")
	}
}

// scopesField writes a ToolSpec's Scopes field when the tool has scopes.
func scopesField(g *protogen.GeneratedFile, scopes []string) {
	if len(scopes) == 0 {
		return
	}
	quoted := make([]string, len(scopes))
	for i, sc := range scopes {
		quoted[i] = strconv.Quote(sc)
	}
	g.P("Scopes: []string{", strings.Join(quoted, ", "), "},")
}

// schemaConstants writes the JSON Schemas of the tools' arguments and structured results.
func (sg *serviceGen) schemaConstants() {
	g := sg.g
	for _, t := range sg.s.tools {
		g.P("// ", t.schemaPrefix, "InputSchema is the JSON Schema of the ", t.name, " tool's arguments")
		g.P("// (", t.Input.Desc.FullName(), ").")
		g.P("const ", t.schemaPrefix, "InputSchema = ", rawString(t.inputSchema))
		g.P()
		if t.outputSchema != "" {
			g.P("// ", t.schemaPrefix, "OutputSchema is the JSON Schema of the ", t.name, " tool's structured")
			g.P("// result (", t.Output.Desc.FullName(), ").")
			g.P("const ", t.schemaPrefix, "OutputSchema = ", rawString(t.outputSchema))
			g.P()
		}
	}
}
