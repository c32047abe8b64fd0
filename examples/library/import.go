package library

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
)

// imports are the library's long-running operations (AIP-151): each import, by name, as its
// operation was last seen, and how to cancel it. They are kept in memory for the process's
// life: an example's store, not a durable one.
type imports struct {
	mu   sync.Mutex
	n    int
	jobs map[string]*importJob
}

// importJob is one import: its operation, which only the import's goroutine changes, and
// the cancellation of its context.
type importJob struct {
	op     *longrunningpb.Operation
	cancel context.CancelFunc
}

// ImportBooks implements LibraryServiceHandler as an AIP-151 long-running operation: it
// checks the books, starts adding them (in one transaction: all or none) and returns the
// operation at once, not done, named imports/<n>. GetOperation reads how far it is (its
// metadata: books imported of the total) and, once done, the books with their new ids (its
// response); CancelOperation stops it. Over MCP the rpc is a tool that runs as a task: the
// bridge polls GetOperation (connectmcp.WithOperations), the task's metadata follows the
// operation's, and its result is the operation's response.
func (s *Service) ImportBooks(ctx context.Context, req *connect.Request[libraryv1.ImportBooksRequest]) (*connect.Response[longrunningpb.Operation], error) {
	books := req.Msg.GetBooks()
	var bad errdetails.BadRequest
	for i, b := range books {
		if strings.TrimSpace(b.GetTitle()) == "" {
			bad.FieldViolations = append(bad.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: fmt.Sprintf("books[%d].title", i), Description: "must not be empty"})
		}
		if strings.TrimSpace(b.GetAuthor()) == "" {
			bad.FieldViolations = append(bad.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: fmt.Sprintf("books[%d].author", i), Description: "must not be empty"})
		}
	}
	if len(books) == 0 || len(bad.FieldViolations) > 0 {
		e := connect.NewError(connect.CodeInvalidArgument, errors.New("the import needs at least one book, each complete"))
		if d, err := connect.NewErrorDetail(&bad); err == nil && len(bad.FieldViolations) > 0 {
			e.AddDetail(d)
		}
		return nil, e
	}
	metadata, err := importMetadata(0, len(books))
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	// The import outlives the rpc: its context keeps the call's values, not its end.
	jobCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.imports.mu.Lock()
	if s.imports.jobs == nil {
		s.imports.jobs = map[string]*importJob{}
	}
	s.imports.n++
	op := &longrunningpb.Operation{Name: fmt.Sprintf("imports/%d", s.imports.n), Metadata: metadata}
	s.imports.jobs[op.Name] = &importJob{op: op, cancel: cancel}
	s.imports.mu.Unlock()
	go s.runImport(jobCtx, cancel, op.Name, books)
	return connect.NewResponse(proto.CloneOf(op)), nil
}

// runImport adds books for the operation name, publishing each step as its metadata, and
// ends the operation with the books or the error.
func (s *Service) runImport(ctx context.Context, cancel context.CancelFunc, name string, books []*libraryv1.CreateBookRequest) {
	defer cancel()
	added, err := s.insertAll(ctx, books, func(imported int) { s.setImport(name, imported, len(books), nil) })
	done := &longrunningpb.Operation{Name: name, Done: true}
	switch {
	case err != nil && ctx.Err() != nil:
		done.Result = &longrunningpb.Operation_Error{Error: &spb.Status{Code: int32(connect.CodeCanceled), Message: "the import was cancelled"}}
	case err != nil:
		if s.Log != nil {
			s.Log.ErrorContext(ctx, "import books", "operation", name, "error", err)
		}
		done.Result = &longrunningpb.Operation_Error{Error: &spb.Status{Code: int32(connect.CodeInternal), Message: "the import failed"}}
	default:
		response, err := anypb.New(&libraryv1.ImportBooksResponse{Books: added})
		if err != nil {
			done.Result = &longrunningpb.Operation_Error{Error: &spb.Status{Code: int32(connect.CodeInternal), Message: err.Error()}}
			break
		}
		done.Result = &longrunningpb.Operation_Response{Response: response}
	}
	s.setImport(name, len(added), len(books), done)
}

// setImport records how far the import name is, and its end when done is not nil.
func (s *Service) setImport(name string, imported, total int, done *longrunningpb.Operation) {
	metadata, err := importMetadata(imported, total)
	if err != nil {
		return // an ImportBooksMetadata always marshals
	}
	s.imports.mu.Lock()
	defer s.imports.mu.Unlock()
	job := s.imports.jobs[name]
	op := &longrunningpb.Operation{Name: name, Metadata: metadata}
	if done != nil {
		op = done
		op.Metadata = metadata
	}
	job.op = op
}

func importMetadata(imported, total int) (*anypb.Any, error) {
	return anypb.New(&libraryv1.ImportBooksMetadata{Imported: int32(imported), Total: int32(total)})
}

// GetOperation implements google.longrunning.Operations' GetOperation for the imports.
func (s *Service) GetOperation(_ context.Context, req *connect.Request[longrunningpb.GetOperationRequest]) (*connect.Response[longrunningpb.Operation], error) {
	s.imports.mu.Lock()
	defer s.imports.mu.Unlock()
	job, ok := s.imports.jobs[req.Msg.GetName()]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("no operation %q", req.Msg.GetName()))
	}
	return connect.NewResponse(proto.CloneOf(job.op)), nil
}

// CancelOperation implements google.longrunning.Operations' CancelOperation for the imports:
// an import not done yet stops, and its operation ends with the error Canceled (AIP-151).
func (s *Service) CancelOperation(_ context.Context, req *connect.Request[longrunningpb.CancelOperationRequest]) (*connect.Response[emptypb.Empty], error) {
	s.imports.mu.Lock()
	job, ok := s.imports.jobs[req.Msg.GetName()]
	s.imports.mu.Unlock()
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("no operation %q", req.Msg.GetName()))
	}
	job.cancel()
	return connect.NewResponse(&emptypb.Empty{}), nil
}

// insertAll adds books in one transaction and returns them with their ids; step says how
// many are added before each next one.
func (s *Service) insertAll(ctx context.Context, books []*libraryv1.CreateBookRequest, step func(imported int)) ([]*libraryv1.Book, error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	out := make([]*libraryv1.Book, 0, len(books))
	for i, b := range books {
		step(i)
		res, err := tx.ExecContext(ctx, `INSERT INTO books (title, author, year, available) VALUES (?, ?, ?, 1)`, b.GetTitle(), b.GetAuthor(), b.GetYear())
		if err != nil {
			return nil, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		out = append(out, &libraryv1.Book{Id: id, Title: b.GetTitle(), Author: b.GetAuthor(), Year: b.GetYear(), Available: true})
	}
	return out, tx.Commit()
}
