package main

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/internal/fieldrules"
)

// The response types of prompts and of resources that are more than one JSON document.
const (
	promptResultName   = "mcp.v1.PromptResult"
	resourceResultName = "mcp.v1.ResourceResult"
)

// prompt is one rpc exposed as an MCP prompt.
type prompt struct {
	*protogen.Method
	name        string
	constName   string
	title       string
	description string
	args        []promptArg
	enums       bool // some argument is an enum: the prompt completes without user code
	validates   bool
}

// promptArg is one prompt argument: a field of the request.
type promptArg struct {
	name, description string
	required          bool
}

// resource is one rpc exposed as an MCP resource template or fixed resource.
type resource struct {
	*protogen.Method
	name        string
	constName   string // the Go constant holding the URI template or URI
	uriTemplate string
	uri         string
	title       string
	description string
	mimeType    string
	validates   bool
}

// methodKind reads which of the mutually exclusive MCP options an rpc carries.
func methodKind(m *protogen.Method) (tool *mcpv1.ToolOptions, p *mcpv1.PromptOptions, r *mcpv1.ResourceOptions) {
	opts, _ := m.Desc.Options().(*descriptorpb.MethodOptions)
	if opts == nil {
		return nil, nil, nil
	}
	if proto.HasExtension(opts, mcpv1.E_Tool) {
		tool, _ = proto.GetExtension(opts, mcpv1.E_Tool).(*mcpv1.ToolOptions)
	}
	if proto.HasExtension(opts, mcpv1.E_Prompt) {
		p, _ = proto.GetExtension(opts, mcpv1.E_Prompt).(*mcpv1.PromptOptions)
	}
	if proto.HasExtension(opts, mcpv1.E_Resource) {
		r, _ = proto.GetExtension(opts, mcpv1.E_Resource).(*mcpv1.ResourceOptions)
	}
	return tool, p, r
}

// methodFail returns the error constructor of an rpc: every message names the file and the
// rpc.
func methodFail(f *protogen.File, m *protogen.Method) func(format string, args ...any) error {
	return func(format string, args ...any) error {
		return fmt.Errorf("%s: rpc %s: %s", f.Desc.Path(), m.Desc.FullName(), fmt.Sprintf(format, args...))
	}
}

// newPrompt computes the prompt of one rpc marked (mcp.v1.prompt): its name (the rpc's in
// snake case by default), its description (the rpc's comment by default) and its arguments.
func newPrompt(f *protogen.File, m *protogen.Method, opts *mcpv1.PromptOptions) (*prompt, error) {
	fail := methodFail(f, m)
	if isStreaming(m) {
		return nil, fail("a prompt cannot stream (prompts/get has one request and one result)")
	}
	if m.Output.Desc.FullName() != promptResultName {
		return nil, fail("a prompt must return %s, not %s", promptResultName, m.Output.Desc.FullName())
	}
	p := &prompt{
		Method:      m,
		name:        cmp.Or(opts.GetName(), snakeCase(string(m.Desc.Name()))),
		constName:   m.Parent.GoName + m.GoName + "PromptName",
		title:       opts.GetTitle(),
		description: cmp.Or(opts.GetDescription(), cleanComment(string(m.Comments.Leading))),
		validates:   usesValidate(m.Input.Desc),
	}
	if !toolNamePattern.MatchString(p.name) {
		return nil, fail("prompt name %q is invalid: it must match %s", p.name, toolNamePattern)
	}
	if err := p.addArgs(m.Input); err != nil {
		return nil, fail("%v", err)
	}
	return p, nil
}

// isStreaming reports whether either side of an rpc streams.
func isStreaming(m *protogen.Method) bool {
	return m.Desc.IsStreamingClient() || m.Desc.IsStreamingServer()
}

// addArgs adds one argument per field of req, the prompt's request, each of which must be a
// scalar or an enum (arguments are strings); enums makes the prompt complete their values.
func (p *prompt) addArgs(req *protogen.Message) error {
	for _, fd := range req.Fields {
		if err := scalarField(fd.Desc); err != nil {
			return fmt.Errorf("prompt argument %s: %w", fd.Desc.FullName(), err)
		}
		p.args = append(p.args, promptArg{
			name:        fd.Desc.JSONName(),
			description: cleanComment(string(fd.Comments.Leading)),
			required:    fieldrules.Required(fd.Desc) || validateRequired(fd.Desc),
		})
		p.enums = p.enums || fd.Desc.Enum() != nil
	}
	return nil
}

// scalarField checks that a field can carry a string-valued prompt argument or URI variable.
func scalarField(fd protoreflect.FieldDescriptor) error {
	switch {
	case fd.IsMap():
		return fmt.Errorf("is a map; prompt arguments and URI variables are strings, so their fields must be scalars or enums")
	case fd.IsList():
		return fmt.Errorf("is repeated; prompt arguments and URI variables are strings, so their fields must be scalars or enums")
	case fd.Message() != nil:
		return fmt.Errorf("is a message (%s); prompt arguments and URI variables are strings, so their fields must be scalars or enums", fd.Message().FullName())
	case fd.Kind() == protoreflect.BytesKind:
		return fmt.Errorf("is bytes; prompt arguments and URI variables are strings, so their fields must be scalars or enums")
	}
	return nil
}

// newResource computes the resource of one rpc marked (mcp.v1.resource): a resource template
// or a fixed resource, named as a prompt is, whose MIME type is JSON by default unless it
// returns mcp.v1.ResourceResult.
func newResource(f *protogen.File, m *protogen.Method, opts *mcpv1.ResourceOptions) (*resource, error) {
	fail := methodFail(f, m)
	if isStreaming(m) {
		return nil, fail("a resource cannot stream (resources/read has one request and one result)")
	}
	r := &resource{
		Method:      m,
		name:        cmp.Or(opts.GetName(), snakeCase(string(m.Desc.Name()))),
		uriTemplate: opts.GetUriTemplate(),
		uri:         opts.GetUri(),
		title:       opts.GetTitle(),
		description: cmp.Or(opts.GetDescription(), cleanComment(string(m.Comments.Leading))),
		mimeType:    opts.GetMimeType(),
		validates:   usesValidate(m.Input.Desc),
	}
	if r.mimeType == "" && m.Output.Desc.FullName() != resourceResultName {
		r.mimeType = "application/json"
	}
	if err := r.checkAddress(); err != nil {
		return nil, fail("%v", err)
	}
	return r, nil
}

// checkAddress checks that the resource has a URI or a URI template, not both, that its
// request fits it (fixedResource, templateFields), and names its constant after which it is.
func (r *resource) checkAddress() error {
	switch {
	case r.uri != "" && r.uriTemplate != "":
		return fmt.Errorf("set either uri or uri_template of (mcp.v1.resource), not both")
	case r.uri == "" && r.uriTemplate == "":
		return fmt.Errorf("(mcp.v1.resource) needs a uri_template (a resource template) or a uri (a fixed resource)")
	case r.uri != "":
		r.constName = r.Parent.GoName + r.GoName + "ResourceURI"
		return fixedResource(r.uri, r.Input)
	}
	r.constName = r.Parent.GoName + r.GoName + "URITemplate"
	return templateFields(r.uriTemplate, r.Input)
}

// fixedResource checks a fixed resource: its URI has no template variables, and its request
// no fields, since a resource read has no arguments beyond its URI.
func fixedResource(uri string, req *protogen.Message) error {
	if strings.ContainsAny(uri, "{}") {
		return fmt.Errorf("uri %q has template variables: use uri_template", uri)
	}
	if len(req.Fields) > 0 {
		return fmt.Errorf("the fixed resource %s takes no arguments, but %s has fields: use uri_template with one {variable} per field", uri, req.Desc.FullName())
	}
	return nil
}

// templateFields checks that a resource template's variables and its request's fields are
// the same: each variable a scalar or enum field, named once, and no other field, since a
// resource read has no arguments beyond its URI.
func templateFields(uriTemplate string, req *protogen.Message) error {
	vars, err := uriTemplateVars(uriTemplate)
	if err != nil {
		return fmt.Errorf("uri_template %q: %w", uriTemplate, err)
	}
	used := map[protoreflect.FieldNumber]bool{}
	for _, v := range vars {
		fd, err := variableField(req.Desc, v, used)
		if err != nil {
			return fmt.Errorf("uri_template %q: %w", uriTemplate, err)
		}
		used[fd.Number()] = true
	}
	for _, fd := range req.Fields {
		if !used[fd.Desc.Number()] {
			return fmt.Errorf("field %s is not a variable of uri_template %q: a resource read has no other arguments", fd.Desc.FullName(), uriTemplate)
		}
	}
	return nil
}

// variableField is the field of md that the template variable v names (by proto name, else
// JSON name, as the runtime reads it): a scalar or enum not already used by another variable.
func variableField(md protoreflect.MessageDescriptor, v string, used map[protoreflect.FieldNumber]bool) (protoreflect.FieldDescriptor, error) {
	fd := md.Fields().ByName(protoreflect.Name(v))
	if fd == nil {
		fd = md.Fields().ByJSONName(v)
	}
	switch {
	case fd == nil:
		return nil, fmt.Errorf("variable {%s} is not a field of %s", v, md.FullName())
	case used[fd.Number()]:
		return nil, fmt.Errorf("field %s appears twice", fd.Name())
	}
	if err := scalarField(fd); err != nil {
		return nil, fmt.Errorf("variable {%s}: field %s %w", v, fd.FullName(), err)
	}
	return fd, nil
}

// uriTemplateVars lists the variables of an RFC 6570 level-1 URI template, the level that
// resources/read routes: {name} segments, with nothing but a name in the braces.
func uriTemplateVars(t string) ([]string, error) {
	var vars []string
	for rest := t; ; {
		at, name, after, err := nextTemplateVar(rest)
		if err != nil {
			return nil, err
		}
		if at < 0 {
			break
		}
		if at == 0 && len(vars) > 0 {
			return nil, fmt.Errorf("variables need literal text between them, or the URI cannot be split")
		}
		vars = append(vars, name)
		rest = after
	}
	if len(vars) == 0 {
		return nil, fmt.Errorf("it has no {variable}: use uri for a fixed resource")
	}
	return vars, nil
}

// nextTemplateVar finds the next {name} of rest: at is where its brace opens (-1 when there is
// none), after is the text that follows it. An unmatched brace, or braces that hold more than
// a field name, is an error.
func nextTemplateVar(rest string) (at int, name, after string, err error) {
	i := strings.IndexAny(rest, "{}")
	if i < 0 {
		return -1, "", "", nil
	}
	if rest[i] == '}' {
		return 0, "", "", fmt.Errorf("unmatched }")
	}
	j := strings.IndexAny(rest[i+1:], "{}")
	if j < 0 || rest[i+1+j] == '{' {
		return 0, "", "", fmt.Errorf("unmatched {")
	}
	name = rest[i+1 : i+1+j]
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
		return 0, "", "", fmt.Errorf("{%s} is not a level-1 variable (a field name, without operators or modifiers)", name)
	}
	return i, name, rest[i+1+j+1:], nil
}

// stringField writes the field name of a composite literal with v, quoted, unless v is empty,
// the field's zero value.
func stringField(g *protogen.GeneratedFile, name, v string) {
	if v != "" {
		g.P(name, ": ", strconv.Quote(v), ",")
	}
}

// literal is a's runtime.PromptArgument literal, without its zero fields.
func (a promptArg) literal() string {
	line := "{Name: " + strconv.Quote(a.name)
	if a.description != "" {
		line += ", Description: " + strconv.Quote(a.description)
	}
	if a.required {
		line += ", Required: true"
	}
	return line + "}"
}

// generatePromptRegistration writes the registration of one prompt.
func generatePromptRegistration(g *protogen.GeneratedFile, svc string, p *prompt) {
	if len(p.args) > 0 {
		g.P("var complete ", runtimePackage.Ident("CompletionHandler"))
		g.P("if c, ok := h.(", svc+p.GoName+"Completer", "); ok {")
		g.P("complete = c.Complete", p.GoName)
		g.P("}")
	}
	g.P(runtimePackage.Ident("AddTypedPrompt"), "(s, ", runtimePackage.Ident("PromptSpec"), "{")
	g.P("Name: ", p.constName, ",")
	stringField(g, "Title", p.title)
	stringField(g, "Description", p.description)
	if len(p.args) > 0 {
		g.P("Arguments: []", runtimePackage.Ident("PromptArgument"), "{")
		for _, a := range p.args {
			g.P(a.literal(), ",")
		}
		g.P("},")
		g.P("Complete: complete,")
	}
	validateSpecField(g, p.validates)
	rpcMetaField(g, p.Method)
	g.P("}, h.", p.GoName, ", opts...)")
}

// generateResourceRegistration writes the registration of one resource.
func generateResourceRegistration(g *protogen.GeneratedFile, svc string, r *resource) {
	if r.uriTemplate != "" {
		g.P("var complete ", runtimePackage.Ident("CompletionHandler"))
		g.P("if c, ok := h.(", svc+r.GoName+"Completer", "); ok {")
		g.P("complete = c.Complete", r.GoName)
		g.P("}")
	}
	g.P(runtimePackage.Ident("AddTypedResource"), "(s, ", runtimePackage.Ident("ResourceSpec"), "{")
	if r.uriTemplate != "" {
		g.P("URITemplate: ", r.constName, ",")
	} else {
		g.P("URI: ", r.constName, ",")
	}
	g.P("Name: ", strconv.Quote(r.name), ",")
	stringField(g, "Title", r.title)
	stringField(g, "Description", r.description)
	stringField(g, "MIMEType", r.mimeType)
	if r.uriTemplate != "" {
		g.P("Complete: complete,")
	}
	validateSpecField(g, r.validates)
	rpcMetaField(g, r.Method)
	g.P("}, h.", r.GoName, ", opts...)")
}

// generateCompleters writes the optional completion interfaces of a service's prompts and
// resource templates.
func generateCompleters(g *protogen.GeneratedFile, s *service) {
	ctx := g.QualifiedGoIdent(contextPackage.Ident("Context"))
	write := func(what, name, goName string) {
		iface := s.GoName + goName + "Completer"
		g.P("// ", iface, " is implemented by a ", s.GoName, "Handler that completes")
		g.P("// (completion/complete) the ", what, " ", name, ".")
		g.P("// Enum fields complete from their values without it: return a nil Completion to leave")
		g.P("// one to that.")
		g.P("type ", iface, " interface {")
		g.P("Complete", goName, "(", ctx, ", *", runtimePackage.Ident("CompleteParams"), ") (*", runtimePackage.Ident("Completion"), ", error)")
		g.P("}")
		g.P()
	}
	for _, p := range s.prompts {
		if len(p.args) > 0 {
			write("arguments of the prompt", p.name, p.GoName)
		}
	}
	for _, r := range s.resources {
		if r.uriTemplate != "" {
			write("variables of the resource template", r.uriTemplate, r.GoName)
		}
	}
}

// surface names what the service exposes, for doc comments: "tools", "tools and prompts", ...
func (s *service) surface() string {
	var kinds []string
	if len(s.tools) > 0 {
		kinds = append(kinds, "tools")
	}
	if len(s.prompts) > 0 {
		kinds = append(kinds, "prompts")
	}
	if len(s.resources)+len(s.statics) > 0 {
		kinds = append(kinds, "resources")
	}
	if len(kinds) == 1 {
		return kinds[0]
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1]
}

// withStaticDefaults is a copy of r with its defaults filled in: its URI for a name, and
// text/plain.
func withStaticDefaults(r *mcpv1.StaticResource) *mcpv1.StaticResource {
	r = proto.Clone(r).(*mcpv1.StaticResource)
	r.Name = cmp.Or(r.GetName(), r.GetUri())
	r.MimeType = cmp.Or(r.GetMimeType(), "text/plain")
	return r
}

// staticResources checks a service's (mcp.v1.service).resources.
func staticResources(f *protogen.File, svc *protogen.Service, opts *mcpv1.ServiceOptions, uris map[string]string) ([]*mcpv1.StaticResource, error) {
	var out []*mcpv1.StaticResource
	for i, r := range opts.GetResources() {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s: service %s: (mcp.v1.service).resources[%d]: %s", f.Desc.Path(), svc.Desc.FullName(), i, fmt.Sprintf(format, args...))
		}
		switch {
		case r.GetUri() == "":
			return nil, fail("a static resource needs a uri")
		case strings.ContainsAny(r.GetUri(), "{}"):
			return nil, fail("uri %q has template variables: a resource template is an rpc with (mcp.v1.resource).uri_template", r.GetUri())
		}
		if other, ok := uris[r.GetUri()]; ok {
			return nil, fail("resource %q is already served by %s", r.GetUri(), other)
		}
		uris[r.GetUri()] = "service " + string(svc.Desc.FullName())
		out = append(out, withStaticDefaults(r))
	}
	return out, nil
}

// generateStaticResources writes the registration of a service's static resources.
func generateStaticResources(g *protogen.GeneratedFile, s *service) {
	for _, r := range s.statics {
		g.P("s.AddResource(", runtimePackage.Ident("Resource"), "{")
		g.P("URI: ", strconv.Quote(r.GetUri()), ",")
		g.P("Name: ", strconv.Quote(r.GetName()), ",")
		stringField(g, "Title", r.GetTitle())
		stringField(g, "Description", r.GetDescription())
		g.P("MIMEType: ", strconv.Quote(r.GetMimeType()), ",")
		g.P("}, ", runtimePackage.Ident("StaticText"), "(", strconv.Quote(r.GetMimeType()), ", ", rawString(r.GetText()), "), opts...)")
	}
}
