// Package manifest is the MCP surface of a proto file as protoc-gen-mcp writes it with the
// parameter manifest=true (<file>.mcp.json beside <file>.mcp.go), and as the protomcp command
// reads it for lint, breaking and registry: every tool, prompt and resource with its name,
// title, description, annotations, scopes and schemas, and the rpc that serves it.
//
// The encoding is stable so that a manifest diffs well in review: fields in a fixed order,
// lists sorted by name, schemas indented as the plugin wrote them, one trailing newline.
package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Format names the manifest format and its version. A reader refuses other formats: a later
// version that changes meaning gets a new name.
const Format = "protomcp.manifest/v1"

// Suffix ends the name of every manifest file.
const Suffix = ".mcp.json"

// File is the manifest of one proto file.
type File struct {
	// Format is always [Format].
	Format string `json:"format"`
	// Source is the proto file's path, e.g. "weather/v1/weather.proto".
	Source string `json:"source"`
	// Package is the proto package, e.g. "weather.v1".
	Package string `json:"package"`
	// Server is the file's (mcp.v1.server) option: how its server is listed in the MCP
	// registry.
	Server *Server `json:"server,omitempty"`
	// Services are the file's services that expose something, sorted by full name.
	Services []Service `json:"services,omitempty"`
	// Tools are every service's tools, sorted by name.
	Tools []Tool `json:"tools,omitempty"`
	// Prompts are every service's prompts, sorted by name.
	Prompts []Prompt `json:"prompts,omitempty"`
	// Resources are every service's resources and resource templates, sorted by URI or URI
	// template.
	Resources []Resource `json:"resources,omitempty"`
}

// Server describes the server for the MCP registry, from the file option (mcp.v1.server).
type Server struct {
	Name          string `json:"name,omitempty"`          // reverse-DNS, e.g. io.github.owner/weather
	Title         string `json:"title,omitempty"`         // a display title
	Description   string `json:"description,omitempty"`   // what the server does
	WebsiteURL    string `json:"websiteUrl,omitempty"`    // its homepage or documentation
	RepositoryURL string `json:"repositoryUrl,omitempty"` // its source repository
}

// Service is a protobuf service: the unit that one Register function adds to a server.
type Service struct {
	// Name is the service's full name, e.g. "weather.v1.WeatherService".
	Name string `json:"name"`
	// Description is the service's leading comment.
	Description string `json:"description,omitempty"`
}

// Tool is one rpc exposed as an MCP tool (spec 2025-11-25, Server Features, Tools).
type Tool struct {
	// Name is the MCP tool name.
	Name string `json:"name"`
	// RPC is the rpc's full name, "pkg.Service/Method".
	RPC string `json:"rpc"`
	// Title is the tool's human-readable title, if any.
	Title string `json:"title,omitempty"`
	// Description is what a model reads to choose the tool.
	Description string `json:"description"`
	// Annotations are the behaviour hints the tool advertises; nil when none is set.
	Annotations *Annotations `json:"annotations,omitempty"`
	// Scopes are the OAuth scopes a caller's token needs.
	Scopes []string `json:"scopes,omitempty"`
	// Streaming is set for a server-streaming rpc, whose messages go out as progress.
	Streaming bool `json:"streaming,omitempty"`
	// InputSchema is the JSON Schema of the arguments.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the JSON Schema of the structured result; absent for free-form
	// content results.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// Annotations are a tool's behaviour hints (spec 2025-11-25, Schema, ToolAnnotations). Unset
// hints take the spec's defaults: readOnlyHint false, destructiveHint true, idempotentHint
// false, openWorldHint true.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`    // the tool does not modify its environment
	DestructiveHint *bool `json:"destructiveHint,omitempty"` // its updates may be destructive
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`  // repeated calls have no further effect
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`   // it reaches an open world of entities
}

// Effective returns the hints with the spec's defaults filled in.
func (a *Annotations) Effective() (readOnly, destructive, idempotent, openWorld bool) {
	get := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	if a == nil {
		a = &Annotations{}
	}
	return get(a.ReadOnlyHint, false), get(a.DestructiveHint, true), get(a.IdempotentHint, false), get(a.OpenWorldHint, true)
}

// Prompt is one rpc exposed as an MCP prompt (spec 2025-11-25, Server Features, Prompts).
type Prompt struct {
	Name        string     `json:"name"`                // the MCP prompt name
	RPC         string     `json:"rpc"`                 // "pkg.Service/Method"
	Title       string     `json:"title,omitempty"`     // the human-readable title, if any
	Description string     `json:"description"`         // what the prompt is for
	Arguments   []Argument `json:"arguments,omitempty"` // in the request's field order
}

// Argument is one prompt argument.
type Argument struct {
	Name        string `json:"name"`               // the request field's JSON name
	Description string `json:"description"`        // the field's comment
	Required    bool   `json:"required,omitempty"` // prompts/get refuses a call without it
}

// Resource is a fixed resource or a resource template (spec 2025-11-25, Server Features,
// Resources): an rpc with (mcp.v1.resource), or a static resource of (mcp.v1.service).
type Resource struct {
	Name        string `json:"name"`                  // the resource's name
	URI         string `json:"uri,omitempty"`         // a fixed resource
	URITemplate string `json:"uriTemplate,omitempty"` // a resource template
	// RPC serves the resource; empty for a static resource, whose text is in the proto.
	RPC string `json:"rpc,omitempty"`
	// Service declares a static resource.
	Service     string `json:"service,omitempty"`
	Title       string `json:"title,omitempty"`    // the human-readable title, if any
	Description string `json:"description"`        // what the resource holds
	MIMEType    string `json:"mimeType,omitempty"` // the contents' MIME type
}

// Key is what identifies the resource on the wire: its URI or URI template.
func (r Resource) Key() string {
	if r.URITemplate != "" {
		return r.URITemplate
	}
	return r.URI
}

// Marshal encodes a manifest in its stable form. It sorts the lists in place.
func Marshal(f *File) ([]byte, error) {
	f.Format = Format
	sort.Slice(f.Services, func(i, j int) bool { return f.Services[i].Name < f.Services[j].Name })
	sort.Slice(f.Tools, func(i, j int) bool { return f.Tools[i].Name < f.Tools[j].Name })
	sort.Slice(f.Prompts, func(i, j int) bool { return f.Prompts[i].Name < f.Prompts[j].Name })
	sort.Slice(f.Resources, func(i, j int) bool { return f.Resources[i].Key() < f.Resources[j].Key() })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("encode manifest of %s: %w", f.Source, err)
	}
	return buf.Bytes(), nil
}

// Unmarshal decodes a manifest and checks its format.
func Unmarshal(b []byte) (*File, error) {
	f := &File{}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	if f.Format != Format {
		return nil, fmt.Errorf("not a protomcp manifest: format %q, want %q", f.Format, Format)
	}
	return f, nil
}

// Loaded is a manifest and the file it was read from.
type Loaded struct {
	Path string // the manifest file's path, as found from Load's argument
	*File
}

// Load reads manifests from paths: each a manifest file, or a directory searched recursively
// for files named *.mcp.json. The result is sorted by path; a path that holds no manifest is
// an error, so that a typo in CI does not pass as "nothing to check".
func Load(paths ...string) ([]Loaded, error) {
	var out []Loaded
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("read manifests: %w", err)
		}
		if !st.IsDir() {
			l, err := loadFile(p)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), Suffix) {
				return nil
			}
			l, err := loadFile(path)
			if err != nil {
				return err
			}
			out = append(out, l)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read manifests in %s: %w", p, err)
		}
		if len(out) == n {
			return nil, fmt.Errorf("read manifests: no %s file in %s (generate them with protoc-gen-mcp's manifest=true)", Suffix, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func loadFile(path string) (Loaded, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Loaded{}, fmt.Errorf("read manifest: %w", err)
	}
	f, err := Unmarshal(b)
	if err != nil {
		return Loaded{}, fmt.Errorf("%s: %w", path, err)
	}
	return Loaded{Path: path, File: f}, nil
}
