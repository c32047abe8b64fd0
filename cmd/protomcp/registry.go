package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/protomcp/protomcp/internal/manifest"
)

// serverSchemaURL is the MCP registry's server.json schema that registry writes to, and
// whose copy (testdata/server.schema.json, see testdata/README.md) it validates against.
const serverSchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

//go:embed testdata/server.schema.json
var serverSchemaJSON []byte

// serverSchema is the compiled server.json schema.
var serverSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(serverSchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("server.json schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(serverSchemaURL, doc); err != nil {
		return nil, fmt.Errorf("server.json schema: %w", err)
	}
	s, err := c.Compile(serverSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("server.json schema: %w", err)
	}
	return s, nil
})

// validateServerJSON checks a server.json against the registry's schema.
func validateServerJSON(b []byte) error {
	s, err := serverSchema()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("server.json: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("server.json does not match %s: %w", serverSchemaURL, err)
	}
	return nil
}

// serverJSON is the registry's server.json (schema 2025-12-11), the parts protomcp writes.
type serverJSON struct {
	Schema      string          `json:"$schema"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	Version     string          `json:"version"`
	WebsiteURL  string          `json:"websiteUrl,omitempty"`
	Repository  *repository     `json:"repository,omitempty"`
	Remotes     []transport     `json:"remotes,omitempty"`
	Packages    []pkg           `json:"packages,omitempty"`
	Meta        *serverJSONMeta `json:"_meta,omitempty"`
}

type repository struct {
	URL       string `json:"url"`
	Source    string `json:"source"`
	Subfolder string `json:"subfolder,omitempty"`
}

type transport struct {
	Type string `json:"type"`
	URL  string `json:"url,omitempty"`
}

type pkg struct {
	RegistryType     string     `json:"registryType"`
	Identifier       string     `json:"identifier"`
	FileSHA256       string     `json:"fileSha256,omitempty"`
	Transport        transport  `json:"transport"`
	PackageArguments []argument `json:"packageArguments,omitempty"`
}

type argument struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type serverJSONMeta struct {
	Publisher publisherMeta `json:"io.modelcontextprotocol.registry/publisher-provided"`
}

// publisherMeta lists what the server exposes, from its manifests, for downstream
// registries.
type publisherMeta struct {
	Tool      string   `json:"tool"`
	Tools     []string `json:"tools,omitempty"`
	Prompts   []string `json:"prompts,omitempty"`
	Resources []string `json:"resources,omitempty"`
}

// registryFlags are what the proto does not say about a release, or overrides of what its
// (mcp.v1.server) option says.
type registryFlags struct {
	name, title, description, version, website string
	repo, repoSource, repoSubfolder            string
	remotes, oci, stdioArgs                    listFlag
	mcpb, mcpbSHA256                           string
}

// serverName is the registry's name rule: reverse-DNS namespace, one slash, server name
// (server.schema.json, ServerDetail.name).
var serverName = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

func runRegistry(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("protomcp registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f registryFlags
	fs.StringVar(&f.name, "name", "", "server name in reverse-DNS form, e.g. io.github.owner/weather (required unless (mcp.v1.server).name says it)")
	fs.StringVar(&f.version, "version", "", "the release's version, e.g. 1.2.0 (required)")
	fs.StringVar(&f.title, "title", "", "display title")
	fs.StringVar(&f.description, "description", "", "what the server does, 100 characters at most (default: (mcp.v1.server).description, else the comment of the manifests' one service)")
	fs.StringVar(&f.website, "website", "", "the server's homepage or documentation URL")
	fs.StringVar(&f.repo, "repository", "", "source repository URL, e.g. https://github.com/owner/repo")
	fs.StringVar(&f.repoSource, "repository-source", "", "repository host: github, gitlab... (default: from the URL's host)")
	fs.StringVar(&f.repoSubfolder, "repository-subfolder", "", "the server's folder within the repository")
	fs.Var(&f.remotes, "url", "a Streamable HTTP endpoint where the server is hosted (repeatable)")
	fs.Var(&f.oci, "oci", "an OCI image that runs the server over stdio, with tag or digest, e.g. ghcr.io/owner/weather:1.2.0 (repeatable)")
	fs.StringVar(&f.mcpb, "mcpb", "", "an HTTPS URL of an MCPB bundle that runs the server over stdio (GitHub or GitLab release asset)")
	fs.StringVar(&f.mcpbSHA256, "mcpb-sha256", "", "the SHA-256 of the MCPB bundle, in hex (required with --mcpb)")
	fs.Var(&f.stdioArgs, "stdio-arg", "an argument of the packaged command that makes it serve stdio, e.g. -stdio (repeatable)")
	format := fs.String("format", "json", "output format: json, the only one (server.json is JSON)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: protomcp registry [flags] MANIFEST...")
		fs.PrintDefaults()
	}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: registry needs manifest files or directories", errUsage)
	}
	if *format != "json" {
		return fmt.Errorf("%w: --format is json, not %q", errUsage, *format)
	}
	ms, err := loadManifests(paths...)
	if err != nil {
		return err
	}
	s, err := buildServerJSON(ms, &f)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode server.json: %w", err)
	}
	b = append(b, '\n')
	if err := validateServerJSON(b); err != nil {
		// The flags made a server.json the registry would refuse: a finding, like lint's.
		fmt.Fprintln(stderr, "protomcp registry:", err)
		return errFindings
	}
	if _, err := stdout.Write(b); err != nil {
		return fmt.Errorf("write server.json: %w", err)
	}
	return nil
}

// fromProto fills the flags left empty from the manifests' (mcp.v1.server) options. Files
// that set one field to different values conflict unless a flag settles it.
func (f *registryFlags) fromProto(ms []manifest.Loaded) error {
	for _, field := range []struct {
		flag, option string
		to           *string
		get          func(*manifest.Server) string
	}{
		{"--name", "name", &f.name, func(s *manifest.Server) string { return s.Name }},
		{"--title", "title", &f.title, func(s *manifest.Server) string { return s.Title }},
		{"--description", "description", &f.description, func(s *manifest.Server) string { return s.Description }},
		{"--website", "website_url", &f.website, func(s *manifest.Server) string { return s.WebsiteURL }},
		{"--repository", "repository_url", &f.repo, func(s *manifest.Server) string { return s.RepositoryURL }},
	} {
		if *field.to != "" {
			continue
		}
		from := ""
		for _, m := range ms {
			if m.Server == nil {
				continue
			}
			v := field.get(m.Server)
			switch {
			case v == "":
			case *field.to == "":
				*field.to, from = v, m.Path
			case v != *field.to:
				return fmt.Errorf("%w: (mcp.v1.server).%s is %q in %s but %q in %s: set %s", errUsage, field.option, *field.to, from, v, m.Path, field.flag)
			}
		}
	}
	return nil
}

// buildServerJSON makes the server.json of the server the manifests describe: from the
// flags, then the proto's (mcp.v1.server) options, then its service comment.
func buildServerJSON(ms []manifest.Loaded, f *registryFlags) (*serverJSON, error) {
	flags := *f
	f = &flags
	if err := f.fromProto(ms); err != nil {
		return nil, err
	}
	if !serverName.MatchString(f.name) {
		return nil, fmt.Errorf("%w: --name %q is not a registry server name (reverse-DNS namespace/name, e.g. io.github.owner/weather)", errUsage, f.name)
	}
	if f.version == "" {
		return nil, fmt.Errorf("%w: --version is required", errUsage)
	}
	if len(f.remotes) == 0 && len(f.oci) == 0 && f.mcpb == "" {
		return nil, fmt.Errorf("%w: say where the server runs: --url for a hosted Streamable HTTP endpoint, --oci or --mcpb for a package", errUsage)
	}
	s := &serverJSON{Schema: serverSchemaURL, Name: f.name, Title: f.title, Version: f.version, WebsiteURL: f.website}
	meta := publisherMeta{Tool: "protomcp"}
	var services []manifest.Service
	for _, m := range ms {
		services = append(services, m.Services...)
		for _, t := range m.Tools {
			meta.Tools = append(meta.Tools, t.Name)
		}
		for _, p := range m.Prompts {
			meta.Prompts = append(meta.Prompts, p.Name)
		}
		for _, r := range m.Resources {
			meta.Resources = append(meta.Resources, r.Key())
		}
	}
	s.Meta = &serverJSONMeta{Publisher: meta}
	s.Description = f.description
	if s.Description == "" {
		if len(services) != 1 || services[0].Description == "" {
			return nil, fmt.Errorf("%w: --description is required: the manifests have %d services, so no one comment describes the server", errUsage, len(services))
		}
		s.Description = services[0].Description
	}
	if n := len([]rune(s.Description)); n > 100 {
		return nil, fmt.Errorf("%w: the description is %d characters; the registry takes 100 at most: shorten it with --description", errUsage, n)
	}
	if f.repo != "" {
		s.Repository = &repository{URL: f.repo, Source: f.repoSource, Subfolder: f.repoSubfolder}
		if s.Repository.Source == "" {
			u, err := url.Parse(f.repo)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("%w: --repository %q is not a URL", errUsage, f.repo)
			}
			host := strings.TrimPrefix(u.Hostname(), "www.")
			s.Repository.Source = strings.TrimSuffix(strings.TrimSuffix(host, ".com"), ".org")
		}
	}
	for _, u := range f.remotes {
		s.Remotes = append(s.Remotes, transport{Type: "streamable-http", URL: u})
	}
	var args []argument
	for _, a := range f.stdioArgs {
		args = append(args, argument{Type: "positional", Value: a})
	}
	for _, image := range f.oci {
		s.Packages = append(s.Packages, pkg{RegistryType: "oci", Identifier: image, Transport: transport{Type: "stdio"}, PackageArguments: args})
	}
	if f.mcpb != "" {
		if f.mcpbSHA256 == "" {
			return nil, fmt.Errorf("%w: --mcpb needs --mcpb-sha256: clients check the bundle's hash before they run it", errUsage)
		}
		s.Packages = append(s.Packages, pkg{RegistryType: "mcpb", Identifier: f.mcpb, FileSHA256: f.mcpbSHA256, Transport: transport{Type: "stdio"}, PackageArguments: args})
	}
	return s, nil
}
