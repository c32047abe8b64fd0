package main

import (
	"bytes"
	"fmt"
	"go/format"
	"path"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// generateSkeleton writes, with skeleton=true, a starter server for the file's services:
// <name>.skeleton.go.txt beside the generated code, a package main with every method stubbed
// and a main that serves it over Streamable HTTP or stdio. Its .txt suffix keeps it out of
// builds: the user copies it out and renames it, so that regenerating never overwrites code
// they have edited.
func generateSkeleton(gen *protogen.Plugin, f *protogen.File, mcpFile string, mcpImport protogen.GoImportPath, mcpPkg protogen.GoPackageName, services []*service) error {
	imports := newSkeletonImports()
	mcp := imports.name(mcpImport, mcpPkg)
	qualify := func(m *protogen.Message) string {
		file := gen.FilesByPath[m.Desc.ParentFile().Path()]
		return imports.name(m.GoIdent.GoImportPath, file.GoPackageName) + "." + m.GoIdent.GoName
	}

	var b, body bytes.Buffer
	out := &body
	p := func(args ...any) {
		fmt.Fprint(out, args...)
		out.WriteByte('\n')
	}
	stubs := 0
	for _, s := range services {
		stubs += skeletonService(p, s, mcp, qualify)
	}
	skeletonMain(p, f, services, mcp)
	out = &b

	p("// A starter MCP server for ", f.Desc.Path(), ", written by protoc-gen-mcp (skeleton=true).")
	p("//")
	p("// Copy this file out of the generated code and rename it to main.go; fill in the TODOs.")
	p("// protoc-gen-mcp rewrites this .txt file on every run and never touches your copy.")
	p("//")
	p("//\tgo run . -addr 127.0.0.1:8080   # Streamable HTTP on http://127.0.0.1:8080/mcp")
	p("//\tgo run . -stdio                  # stdio, for a host that launches the server")
	p("package main")
	p()
	imports.write(p, stubs > 0)
	b.Write(body.Bytes())

	src, err := format.Source(b.Bytes())
	if err != nil {
		return fmt.Errorf("%s: the server skeleton does not parse: %v", f.Desc.Path(), err)
	}
	dir, base := path.Split(mcpFile)
	g := gen.NewGeneratedFile(dir+strings.TrimSuffix(base, ".mcp.go")+".skeleton.go.txt", "")
	_, err = g.Write(src)
	return err
}

// skeletonService writes the handler of one service; it returns how many methods it stubbed.
func skeletonService(p func(...any), s *service, mcp string, qualify func(*protogen.Message) string) int {
	typ := unexport(s.GoName)
	p("// ", typ, " implements ", mcp, ".", s.GoName, "Handler.")
	p("type ", typ, " struct {")
	p("// Embedded, it keeps this type compiling when the service gains rpcs; those it alone")
	p("// serves are not offered to clients.")
	p(mcp, ".Unimplemented", s.GoName, "Handler")
	p("}")
	p()
	for _, t := range s.tools {
		in, out := qualify(t.Input), qualify(t.Output)
		if t.streaming {
			p("// ", t.GoName, " serves the ", t.name, " tool: send each message with stream.Send; the")
			p("// last one is the result.")
			p("func (s *", typ, ") ", t.GoName, "(ctx context.Context, req *", in, ", stream *runtime.ServerStream[", out, "]) error {")
			skeletonFields(p, t.Input)
			p("\treturn errors.New(\"TODO: implement the ", t.name, " tool\")")
			p("}")
			p()
			continue
		}
		p("// ", t.GoName, " serves the ", t.name, " tool.")
		p("func (s *", typ, ") ", t.GoName, "(ctx context.Context, req *", in, ") (*", out, ", error) {")
		skeletonFields(p, t.Input)
		p("\treturn nil, errors.New(\"TODO: implement the ", t.name, " tool\")")
		p("}")
		p()
	}
	for _, pr := range s.prompts {
		p("// ", pr.GoName, " renders the ", pr.name, " prompt.")
		p("func (s *", typ, ") ", pr.GoName, "(ctx context.Context, req *", qualify(pr.Input), ") (*", qualify(pr.Output), ", error) {")
		skeletonFields(p, pr.Input)
		p("\treturn nil, errors.New(\"TODO: implement the ", pr.name, " prompt\")")
		p("}")
		p()
	}
	for _, r := range s.resources {
		p("// ", r.GoName, " reads the resource ", r.uri+r.uriTemplate, ".")
		p("func (s *", typ, ") ", r.GoName, "(ctx context.Context, req *", qualify(r.Input), ") (*", qualify(r.Output), ", error) {")
		skeletonFields(p, r.Input)
		p("\treturn nil, errors.New(\"TODO: implement the resource ", r.uri+r.uriTemplate, "\")")
		p("}")
		p()
	}
	return len(s.tools) + len(s.prompts) + len(s.resources)
}

func skeletonMain(p func(...any), f *protogen.File, services []*service, mcp string) {
	p("func main() {")
	p("addr := flag.String(\"addr\", \"127.0.0.1:8080\", \"address to serve MCP on, at /mcp (Streamable HTTP)\")")
	p("stdio := flag.Bool(\"stdio\", false, \"serve MCP on standard input and output instead\")")
	p("flag.Parse()")
	p()
	p("srv := runtime.NewServer(runtime.Implementation{Name: ", strconv.Quote(string(f.Desc.Package())), ", Version: \"0.0.1\"})")
	for _, s := range services {
		p(mcp, ".Register", s.GoName, "Handler(srv, &", unexport(s.GoName), "{})")
	}
	p()
	p("ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)")
	p("defer stop()")
	p("if *stdio {")
	p("// Standard output carries the protocol: log to standard error only.")
	p("if err := srv.ServeStdio(ctx, os.Stdin, os.Stdout); err != nil {")
	p("log.Fatal(err)")
	p("}")
	p("return")
	p("}")
	p("http.Handle(\"/mcp\", srv)")
	p("log.Printf(\"serving MCP on http://%s/mcp\", *addr)")
	p("log.Fatal(http.ListenAndServe(*addr, nil))")
	p("}")
}

// skeletonImports names the packages a skeleton imports: each by its package name, numbered
// when that name is taken (by the standard packages main uses, or another import).
type skeletonImports struct {
	names map[protogen.GoImportPath]string
	used  map[string]bool
}

// newSkeletonImports returns the imports of a skeleton that has none beyond the standard ones.
func newSkeletonImports() *skeletonImports {
	return &skeletonImports{
		names: map[protogen.GoImportPath]string{},
		used:  map[string]bool{"context": true, "errors": true, "flag": true, "log": true, "http": true, "os": true, "runtime": true, "signal": true},
	}
}

// name is the name the skeleton calls the package at p (package pkg) by, importing it.
func (im *skeletonImports) name(p protogen.GoImportPath, pkg protogen.GoPackageName) string {
	if n, ok := im.names[p]; ok {
		return n
	}
	n := string(pkg)
	for i := 2; im.used[n]; i++ {
		n = string(pkg) + strconv.Itoa(i)
	}
	im.used[n] = true
	im.names[p] = n
	return n
}

// write writes the import block: the standard packages (errors only when there are stubs to
// return one), the named imports in order, then the runtime.
func (im *skeletonImports) write(p func(...any), stubs bool) {
	p("import (")
	for _, std := range []string{"context", "errors", "flag", "log", "net/http", "os", "os/signal"} {
		if std != "errors" || stubs {
			p(strconv.Quote(std))
		}
	}
	p()
	paths := make([]string, 0, len(im.names))
	for ip := range im.names {
		paths = append(paths, string(ip))
	}
	sort.Strings(paths)
	for _, ip := range paths {
		p(im.names[protogen.GoImportPath(ip)], " ", strconv.Quote(ip))
	}
	p(strconv.Quote(string(runtimePackage)))
	p(")")
	p()
}

// skeletonFields writes, inside a stub, a comment listing the request's fields with their
// getters, kinds and the first line of their comments.
func skeletonFields(p func(...any), m *protogen.Message) {
	if len(m.Fields) == 0 {
		p("\t// The request has no fields.")
		return
	}
	p("\t// The request's fields:")
	for _, fd := range m.Fields {
		line := "\t//   req.Get" + fd.GoName + "() " + fieldKind(fd.Desc)
		if c := firstLine(fd.Comments.Leading); c != "" {
			line += ": " + c
		}
		p(line)
	}
}

// fieldKind names a field's Go type, roughly, for the skeleton's comments.
func fieldKind(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "map[...]" // a map field's entry types
	case fd.IsList():
		return "[]" + valueKind(fd)
	}
	return valueKind(fd)
}

// valueKind names the Go type of one value of fd: a message pointer, an enum, or a scalar.
func valueKind(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.Message() != nil:
		return "*" + string(fd.Message().Name())
	case fd.Enum() != nil:
		return string(fd.Enum().Name())
	}
	k := fd.Kind().String()
	if g, ok := goScalarNames[k]; ok {
		return g
	}
	return k
}

// goScalarNames maps the proto scalar kinds whose Go type has another name to that name.
var goScalarNames = map[string]string{
	"bytes": "[]byte", "sint32": "int32", "sfixed32": "int32", "sint64": "int64", "sfixed64": "int64",
	"fixed32": "uint32", "fixed64": "uint64", "double": "float64", "float": "float32",
}

// firstLine is the first non-blank line of a comment, trimmed.
func firstLine(c protogen.Comments) string {
	for _, line := range commentLines(c) {
		if strings.TrimSpace(line) != "" {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
