// Command protomcp checks the MCP surface that protoc-gen-mcp describes in its manifests
// (<file>.mcp.json, written with the plugin parameter manifest=true), as buf lint and buf
// breaking check a protobuf API:
//
//	protomcp lint [flags] MANIFEST...             descriptions, names, and the schema limits of OpenAI, Anthropic and Gemini
//	protomcp breaking [flags] OLD NEW             what breaks agents and typed clients between two versions
//	protomcp registry [flags] MANIFEST...         a server.json for the MCP registry
//	protomcp rules                                lists the lint and breaking rules
//
// Each MANIFEST, OLD and NEW is a manifest file or a directory searched for *.mcp.json. lint
// and breaking exit with status 1 when they find an error-level problem (registry when the
// registry's schema would refuse its result), 2 on a usage or input error; --format json
// prints the findings as JSON. Rules are configured per rule in protomcp.json
// (or --config), and with --only and --except; see docs/contract.md.
//
// Install it with
//
//	go get -tool github.com/protomcp/protomcp/cmd/protomcp
//
// and run it with go tool protomcp.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/protomcp/protomcp/internal/manifest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks errors in the command line: exit status 2.
var errUsage = errors.New("usage")

// errFindings means error-level findings were reported: exit status 1.
var errFindings = errors.New("error-level findings")

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "lint":
		err = runLint(args[1:], stdout, stderr)
	case "breaking":
		err = runBreaking(args[1:], stdout, stderr)
	case "registry":
		err = runRegistry(args[1:], stdout, stderr)
	case "rules":
		err = runRules(stdout)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "protomcp: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errFindings):
		return 1
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "protomcp:", err)
		}
		return 2
	default:
		fmt.Fprintln(stderr, "protomcp:", err)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `protomcp checks the MCP surface described by protoc-gen-mcp's manifests (*.mcp.json).

  protomcp lint [flags] MANIFEST...       descriptions, names, provider schema limits
  protomcp breaking [flags] OLD NEW       changes that break agents and typed clients
  protomcp registry [flags] MANIFEST...   a server.json for the MCP registry
  protomcp rules                          the rules, with their default severities

MANIFEST, OLD and NEW are manifest files or directories of them. Run a command with -h for
its flags. Exit status: 0 clean, 1 error-level findings, 2 usage or input errors.
`)
}

// parseInterspersed parses flags that may come before, between or after the positional
// arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// commonFlags are the flags of lint and breaking.
type commonFlags struct {
	format string
	config string
	only   listFlag
	except listFlag
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "format", "text", "output format: text or json")
	fs.StringVar(&c.config, "config", "", "configuration file (default: protomcp.json in the working directory, if any)")
	fs.Var(&c.only, "only", "run only this rule (repeatable, or comma-separated)")
	fs.Var(&c.except, "except", "do not run this rule (repeatable, or comma-separated)")
}

// ruleConfig merges the configuration file's section with the flags.
func (c *commonFlags) ruleConfig(section func(*Config) *RuleConfig, name string, known []string) (*RuleConfig, error) {
	if c.format != "text" && c.format != "json" {
		return nil, fmt.Errorf("%w: --format is text or json, not %q", errUsage, c.format)
	}
	cfg, err := loadConfig(c.config)
	if err != nil {
		return nil, err
	}
	rc := section(cfg)
	if len(c.only) > 0 {
		rc.Only = c.only
	}
	for _, id := range c.except {
		if rc.Except == nil {
			rc.Except = map[string]string{}
		}
		rc.Except[id] = "--except on the command line"
	}
	if err := rc.check(name, known); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return rc, nil
}

func runRules(w io.Writer) error {
	fmt.Fprintln(w, "lint rules:")
	for _, r := range lintRules {
		provider := r.Provider
		if provider == "" {
			provider = "-"
		}
		fmt.Fprintf(w, "  %-36s %-9s %-7s %s\n", r.ID, provider, r.Severity, r.Summary)
	}
	fmt.Fprintln(w, "breaking rules:")
	for _, r := range breakingRules {
		fmt.Fprintf(w, "  %-36s %-7s %s\n", r.ID, r.Severity, r.Summary)
	}
	return nil
}

func runLint(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("protomcp lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c commonFlags
	c.register(fs)
	var provs listFlag
	fs.Var(&provs, "provider", "check only these providers' rules: openai, anthropic, gemini, or none (repeatable, or comma-separated; default all)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: protomcp lint [flags] MANIFEST...")
		fs.PrintDefaults()
	}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: lint needs manifest files or directories", errUsage)
	}
	var only []string
	for _, p := range provs {
		switch {
		case p == "none":
			only = []string{}
		case contains(providers, p):
			only = append(only, p)
		default:
			return fmt.Errorf("%w: unknown provider %q (known: %s, or none)", errUsage, p, strings.Join(providers, ", "))
		}
	}
	rc, err := c.ruleConfig(func(cfg *Config) *RuleConfig { return &cfg.Lint }, "lint", lintRuleIDs())
	if err != nil {
		return err
	}
	ms, err := loadManifests(paths...)
	if err != nil {
		return err
	}
	findings, err := lint(ms, rc, only)
	if err != nil {
		return err
	}
	if err := report(stdout, c.format, findings); err != nil {
		return err
	}
	if hasErrors(findings) {
		return errFindings
	}
	return nil
}

func runBreaking(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("protomcp breaking", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c commonFlags
	c.register(fs)
	oldName := fs.String("old-name", "", "name OLD's files by this and their paths under NEW in the output, e.g. HEAD~1 when OLD is a checkout of it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: protomcp breaking [flags] OLD NEW")
		fs.PrintDefaults()
	}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) != 2 {
		return fmt.Errorf("%w: breaking compares two manifests or directories: OLD NEW", errUsage)
	}
	rc, err := c.ruleConfig(func(cfg *Config) *RuleConfig { return &cfg.Breaking }, "breaking", breakingRuleIDs())
	if err != nil {
		return err
	}
	old, err := loadManifests(paths[0])
	if err != nil {
		return err
	}
	cur, err := loadManifests(paths[1])
	if err != nil {
		return err
	}
	findings, err := breaking(old, cur, rc)
	if err != nil {
		return err
	}
	if *oldName != "" {
		for i, f := range findings {
			if rel, err := filepath.Rel(paths[0], f.File); err == nil && !strings.HasPrefix(rel, "..") {
				// The same file under NEW is the natural name of the old one: HEAD~1:gen/x.mcp.json.
				findings[i].File = *oldName + ":" + filepath.ToSlash(filepath.Join(paths[1], rel))
			}
		}
	}
	if err := report(stdout, c.format, findings); err != nil {
		return err
	}
	if hasErrors(findings) {
		return errFindings
	}
	return nil
}

// loadManifests reads manifest files and directories.
var loadManifests = manifest.Load
