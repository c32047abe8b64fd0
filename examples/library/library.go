// Package library is a lending library's catalogue on SQLite, served from one connect-go
// implementation and one interceptor chain as gRPC (h2c), gRPC-Web, Connect and MCP (/mcp) on
// one port, with gRPC server reflection and grpc.health.v1: see examples/library/server.
package library

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/protomcp/protomcp/connectmcp"
	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1connect"
	"github.com/protomcp/protomcp/examples/library/gen/library/v1/libraryv1mcp"
	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver: no cgo
)

// seed is the catalogue of a new database.
var seed = []*libraryv1.Book{
	{Title: "The Left Hand of Darkness", Author: "Ursula K. Le Guin", Year: 1969, Available: true},
	{Title: "A Wizard of Earthsea", Author: "Ursula K. Le Guin", Year: 1968, Available: false},
	{Title: "Kindred", Author: "Octavia E. Butler", Year: 1979, Available: true},
	{Title: "The Dispossessed", Author: "Ursula K. Le Guin", Year: 1974, Available: true},
	{Title: "Parable of the Sower", Author: "Octavia E. Butler", Year: 1993, Available: true},
}

// Open opens the SQLite database at path, creating it and seeding the catalogue on first
// start.
func Open(ctx context.Context, path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // SQLite writes one at a time: queue here, not on SQLITE_BUSY
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS books (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		title TEXT NOT NULL,
		author TEXT NOT NULL,
		year INTEGER NOT NULL,
		available INTEGER NOT NULL
	)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("create the books table: %w", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM books`).Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("count books: %w", err)
	}
	if n == 0 {
		for _, b := range seed {
			if _, err := db.ExecContext(ctx, `INSERT INTO books (title, author, year, available) VALUES (?, ?, ?, ?)`,
				b.GetTitle(), b.GetAuthor(), b.GetYear(), b.GetAvailable()); err != nil {
				db.Close()
				return nil, fmt.Errorf("seed: %w", err)
			}
		}
	}
	return db, nil
}

// Service implements libraryv1connect.LibraryServiceHandler on a database.
type Service struct {
	DB *sql.DB
	// ExportDelay is the pause before each exported book (for demonstrations and tests of a
	// long stream).
	ExportDelay time.Duration
	Log         *slog.Logger

	imports imports // ImportBooks' operations (import.go)
}

var _ libraryv1connect.LibraryServiceHandler = (*Service)(nil)

// ListBooks implements LibraryServiceHandler.
func (s *Service) ListBooks(ctx context.Context, req *connect.Request[libraryv1.ListBooksRequest]) (*connect.Response[libraryv1.ListBooksResponse], error) {
	books, err := s.books(ctx, req.Msg.GetAuthor())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&libraryv1.ListBooksResponse{Books: books}), nil
}

// GetBook implements LibraryServiceHandler.
func (s *Service) GetBook(ctx context.Context, req *connect.Request[libraryv1.GetBookRequest]) (*connect.Response[libraryv1.Book], error) {
	b := &libraryv1.Book{}
	err := s.DB.QueryRowContext(ctx, `SELECT id, title, author, year, available FROM books WHERE id = ?`, req.Msg.GetId()).
		Scan(&b.Id, &b.Title, &b.Author, &b.Year, &b.Available)
	if errors.Is(err, sql.ErrNoRows) {
		e := connect.NewError(connect.CodeNotFound, fmt.Errorf("no book has id %d", req.Msg.GetId()))
		if d, derr := connect.NewErrorDetail(&errdetails.ResourceInfo{ResourceType: "library.v1.Book", ResourceName: fmt.Sprint(req.Msg.GetId()), Description: "list_books gives the ids"}); derr == nil {
			e.AddDetail(d)
		}
		return nil, e
	}
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("get book: %w", err))
	}
	return connect.NewResponse(b), nil
}

// CreateBook implements LibraryServiceHandler.
func (s *Service) CreateBook(ctx context.Context, req *connect.Request[libraryv1.CreateBookRequest]) (*connect.Response[libraryv1.Book], error) {
	var bad errdetails.BadRequest
	if strings.TrimSpace(req.Msg.GetTitle()) == "" {
		bad.FieldViolations = append(bad.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: "title", Description: "must not be empty"})
	}
	if strings.TrimSpace(req.Msg.GetAuthor()) == "" {
		bad.FieldViolations = append(bad.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: "author", Description: "must not be empty"})
	}
	if len(bad.FieldViolations) > 0 {
		e := connect.NewError(connect.CodeInvalidArgument, errors.New("the book is incomplete"))
		if d, err := connect.NewErrorDetail(&bad); err == nil {
			e.AddDetail(d)
		}
		return nil, e
	}
	res, err := s.DB.ExecContext(ctx, `INSERT INTO books (title, author, year, available) VALUES (?, ?, ?, 1)`,
		req.Msg.GetTitle(), req.Msg.GetAuthor(), req.Msg.GetYear())
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("create book: %w", err))
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("create book: %w", err))
	}
	return connect.NewResponse(&libraryv1.Book{Id: id, Title: req.Msg.GetTitle(), Author: req.Msg.GetAuthor(), Year: req.Msg.GetYear(), Available: true}), nil
}

// DeleteBook implements LibraryServiceHandler. The auth interceptor lets it run only for
// callers with the library:admin scope.
func (s *Service) DeleteBook(ctx context.Context, req *connect.Request[libraryv1.DeleteBookRequest]) (*connect.Response[libraryv1.DeleteBookResponse], error) {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM books WHERE id = ?`, req.Msg.GetId())
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("delete book: %w", err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("delete book: %w", err))
	}
	return connect.NewResponse(&libraryv1.DeleteBookResponse{Deleted: n > 0}), nil
}

// ExportBooks implements LibraryServiceHandler.
func (s *Service) ExportBooks(ctx context.Context, req *connect.Request[libraryv1.ExportBooksRequest], stream *connect.ServerStream[libraryv1.ExportBooksResponse]) error {
	books, err := s.books(ctx, "")
	if err != nil {
		return err
	}
	if s.ExportDelay > 0 {
		s.Log.InfoContext(ctx, "export started", "request_id", req.Header().Get("X-Request-Id"), "books", len(books))
	}
	for i, b := range books {
		if s.ExportDelay > 0 {
			select {
			case <-ctx.Done():
				s.Log.InfoContext(ctx, "export cancelled", "sent", i, "err", ctx.Err())
				return connect.NewError(connect.CodeCanceled, ctx.Err())
			case <-time.After(s.ExportDelay):
			}
		}
		if err := stream.Send(&libraryv1.ExportBooksResponse{Book: b, Progress: int64(i + 1), Total: int64(len(books))}); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) books(ctx context.Context, author string) ([]*libraryv1.Book, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, title, author, year, available FROM books WHERE ? = '' OR author = ? ORDER BY id`, author, author)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("list books: %w", err))
	}
	defer rows.Close()
	var out []*libraryv1.Book
	for rows.Next() {
		b := &libraryv1.Book{}
		if err := rows.Scan(&b.Id, &b.Title, &b.Author, &b.Year, &b.Available); err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("list books: %w", err))
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("list books: %w", err))
	}
	return out, nil
}

// Tokens are the example's bearer tokens and their scopes. A real service verifies JWTs
// (protomcp's jwtauth, or its own) in the same interceptor.
var Tokens = map[string][]string{
	"reader-token": {"library:read"},
	"admin-token":  {"library:read", "library:admin"},
}

// needs says which scope each procedure needs beyond none.
var needs = map[string]string{
	libraryv1connect.LibraryServiceCreateBookProcedure:  "library:admin",
	libraryv1connect.LibraryServiceDeleteBookProcedure:  "library:admin",
	libraryv1connect.LibraryServiceImportBooksProcedure: "library:admin",
	connectmcp.CancelOperationProcedure:                 "library:admin",
}

// Auth is the interceptor that lets CreateBook, ImportBooks and DeleteBook run only for a
// bearer token with the library:admin scope; reads need no token.
func Auth() connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			scope, ok := needs[req.Spec().Procedure]
			if !ok {
				return next(ctx, req)
			}
			token, found := strings.CutPrefix(req.Header().Get("Authorization"), "Bearer ")
			scopes, known := Tokens[token]
			switch {
			case !found || !known:
				return nil, connect.NewError(connect.CodeUnauthenticated, errors.New("a bearer token is needed"))
			case !hasScope(scopes, scope):
				e := connect.NewError(connect.CodePermissionDenied, fmt.Errorf("the token lacks the %s scope", scope))
				if d, err := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: "MISSING_SCOPE", Domain: "library.example", Metadata: map[string]string{"scope": scope}}); err == nil {
					e.AddDetail(d)
				}
				return nil, e
			}
			return next(ctx, req)
		}
	})
}

func hasScope(scopes []string, want string) bool {
	for _, s := range scopes {
		if s == want {
			return true
		}
	}
	return false
}

// Logging is the interceptor that logs one line per call, unary or streaming: the procedure,
// the protocol ("mcp" for a call that came in as an MCP tool call), the request's
// X-Request-Id, the handler's time left until its deadline, and the outcome.
func Logging(log *slog.Logger) connect.Interceptor {
	return logging{log}
}

type logging struct{ log *slog.Logger }

func protocol(ctx context.Context, p string) string {
	if runtime.CallerFrom(ctx) != nil {
		return "mcp"
	}
	return p
}

func (l logging) record(ctx context.Context, spec connect.Spec, proto string, h http.Header, err error) {
	deadline := int64(-1)
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d).Milliseconds()
	}
	l.log.InfoContext(ctx, "call", "procedure", spec.Procedure, "protocol", protocol(ctx, proto),
		"request_id", h.Get("X-Request-Id"), "deadline_ms", deadline, "code", codeOf(err))
}

func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	return connect.CodeOf(err).String()
}

func (l logging) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		l.record(ctx, req.Spec(), req.Peer().Protocol, req.Header(), err)
		return res, err
	}
}

func (l logging) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (l logging) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		err := next(ctx, conn)
		l.record(ctx, conn.Spec(), conn.Peer().Protocol, conn.RequestHeader(), err)
		return err
	}
}

// Handler returns the http.Handler that serves svc on every protocol from one interceptor
// chain: gRPC, gRPC-Web and Connect (connect-go serves the three, told apart by content
// type; Connect's JSON refuses unknown fields, as MCP does), gRPC server reflection (v1 and v1alpha), grpc.health.v1, google.longrunning.Operations
// (GetOperation and CancelOperation) for ImportBooks' operations, and MCP at /mcp, whose
// tools are the same rpcs through the same interceptors. The MCP server is returned for
// its shutdown.
func Handler(svc *Service, log *slog.Logger) (http.Handler, *runtime.Server) {
	interceptors := connect.WithInterceptors(Logging(log), Auth())
	mux := http.NewServeMux()
	mux.Handle(libraryv1connect.NewLibraryServiceHandler(svc, interceptors, StrictJSON()))
	// google.longrunning.Operations, for ImportBooks' operations: no code of
	// protoc-gen-connect-go for it, two unary handlers.
	operations := http.NewServeMux()
	operations.Handle(connectmcp.GetOperationProcedure, connect.NewUnaryHandler(connectmcp.GetOperationProcedure, svc.GetOperation, interceptors, StrictJSON()))
	operations.Handle(connectmcp.CancelOperationProcedure, connect.NewUnaryHandler(connectmcp.CancelOperationProcedure, svc.CancelOperation, interceptors, StrictJSON()))
	mux.Handle("/google.longrunning.Operations/", operations)
	reflector := grpcreflect.NewStaticReflector(libraryv1connect.LibraryServiceName, grpchealth.HealthV1ServiceName)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	mux.Handle(grpchealth.NewHandler(grpchealth.NewStaticChecker(libraryv1connect.LibraryServiceName)))

	srv := runtime.NewServer(runtime.Implementation{Name: "library", Version: "1.0.0"}, runtime.WithLogger(log),
		runtime.WithInterceptors(connectmcp.ErrorInterceptor())) // arguments the schema refuses: invalid_argument too
	libraryv1mcp.RegisterLibraryServiceConnectHandler(srv, svc,
		connectmcp.WithHandlerOptions(interceptors),
		connectmcp.WithOperations(operations),
		connectmcp.WithHeaders("Authorization", "X-Request-Id"))
	mux.Handle("/mcp", srv)
	return mux, srv
}
