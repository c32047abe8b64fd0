package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/internal/manifest"
)

// withManifest registers the manifest parameter on flags and returns the plugin's run
// function: cfg's generation, then, with manifest=true, one <file>.mcp.json beside each
// <file>.mcp.go, which the protomcp command lints, compares and turns into a registry
// server.json.
func withManifest(flags *flag.FlagSet, cfg *config) func(*protogen.Plugin) error {
	enabled := flags.Bool("manifest", false,
		"also write <file>.mcp.json beside <file>.mcp.go: the file's tools, prompts and resources for protomcp lint, breaking and registry")
	return func(gen *protogen.Plugin) error {
		if err := cfg.generate(gen); err != nil {
			return err
		}
		if !*enabled {
			return nil
		}
		return cfg.writeManifests(gen)
	}
}

// writeManifests writes the manifest of every generated file that exposes something.
func (c *config) writeManifests(gen *protogen.Plugin) error {
	return c.forEachExposing(gen, func(f *protogen.File, services []*service) error {
		return c.writeManifest(gen, f, services)
	})
}

// writeManifest writes the manifest of one proto file f beside its .mcp.go file.
func (c *config) writeManifest(gen *protogen.Plugin, f *protogen.File, services []*service) error {
	filename, importPath, _ := c.output(f)
	b, err := manifest.Marshal(fileManifest(f, services))
	if err != nil {
		return err
	}
	g := gen.NewGeneratedFile(strings.TrimSuffix(filename, ".go")+".json", importPath)
	if _, err := g.Write(b); err != nil {
		return fmt.Errorf("%s: write manifest: %w", f.Desc.Path(), err)
	}
	return nil
}

// fileManifest is the manifest of one file's services, as their generated registration
// code declares them.
func fileManifest(f *protogen.File, services []*service) *manifest.File {
	m := &manifest.File{Source: f.Desc.Path(), Package: string(f.Desc.Package()), Server: serverManifest(f)}
	for _, s := range services {
		addServiceManifest(m, s)
	}
	return m
}

// serverManifest is the server that a file's (mcp.v1.server) option describes, or nil.
func serverManifest(f *protogen.File) *manifest.Server {
	opts, _ := proto.GetExtension(f.Desc.Options(), mcpv1.E_Server).(*mcpv1.ServerOptions)
	if opts == nil {
		return nil
	}
	srv := manifest.Server{
		Name: opts.GetName(), Title: opts.GetTitle(), Description: opts.GetDescription(),
		WebsiteURL: opts.GetWebsiteUrl(), RepositoryURL: opts.GetRepositoryUrl(),
	}
	if srv == (manifest.Server{}) {
		return nil
	}
	return &srv
}

// addServiceManifest adds a service, its tools, prompts and resources (static ones included)
// to m.
func addServiceManifest(m *manifest.File, s *service) {
	m.Services = append(m.Services, manifest.Service{
		Name:        string(s.Desc.FullName()),
		Description: cleanComment(string(s.Comments.Leading)),
	})
	for _, t := range s.tools {
		m.Tools = append(m.Tools, toolManifest(t))
	}
	for _, p := range s.prompts {
		m.Prompts = append(m.Prompts, promptManifest(p))
	}
	for _, r := range s.resources {
		m.Resources = append(m.Resources, manifest.Resource{
			Name: r.name, URI: r.uri, URITemplate: r.uriTemplate, RPC: rpcName(r.Method),
			Title: r.title, Description: r.description, MIMEType: r.mimeType,
		})
	}
	for _, r := range s.statics {
		m.Resources = append(m.Resources, manifest.Resource{
			Name: r.GetName(), URI: r.GetUri(), Service: string(s.Desc.FullName()),
			Title: r.GetTitle(), Description: r.GetDescription(), MIMEType: r.GetMimeType(),
		})
	}
}

// promptManifest is a prompt's entry in the manifest.
func promptManifest(p *prompt) manifest.Prompt {
	mp := manifest.Prompt{Name: p.name, RPC: rpcName(p.Method), Title: p.title, Description: p.description}
	for _, a := range p.args {
		mp.Arguments = append(mp.Arguments, manifest.Argument{Name: a.name, Description: a.description, Required: a.required})
	}
	return mp
}

// toolManifest is a tool's entry in the manifest.
func toolManifest(t *tool) manifest.Tool {
	mt := manifest.Tool{
		Name:        t.name,
		RPC:         rpcName(t.Method),
		Title:       t.title,
		Description: t.description,
		Scopes:      t.scopes,
		Streaming:   t.streaming,
		InputSchema: json.RawMessage(t.inputSchema),
	}
	if t.outputSchema != "" {
		mt.OutputSchema = json.RawMessage(t.outputSchema)
	}
	if t.readOnly != nil || t.destructive != nil || t.idempotent != nil || t.openWorld != nil {
		mt.Annotations = &manifest.Annotations{
			ReadOnlyHint: t.readOnly, DestructiveHint: t.destructive,
			IdempotentHint: t.idempotent, OpenWorldHint: t.openWorld,
		}
	}
	return mt
}

// rpcName is an rpc's full name in the form gRPC puts on the wire: "pkg.Service/Method".
func rpcName(m *protogen.Method) string {
	return string(m.Parent.Desc.FullName()) + "/" + string(m.Desc.Name())
}
