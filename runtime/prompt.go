package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// This file serves prompts (spec section "Prompts"): registration, prompts/list and
// prompts/get. The typed adapter is in prompt_typed.go.

// PromptHandler renders a prompt with its arguments.
type PromptHandler func(ctx context.Context, args map[string]string) (*GetPromptResult, error)

type promptEntry struct {
	prompt   Prompt
	handler  PromptHandler
	call     CallFunc          // prompts/get inside the registration's interceptors
	complete CompletionHandler // the prompt's own completions (typed prompts), or nil
	listing  listing           // who sees it, and its cache hint (cache_hint.go)
}

// AddPrompt adds a prompt. Like AddTool, it panics if the server already has a prompt of that
// name: RemovePrompt it first to replace it. Interceptors given in opts wrap this prompt's
// prompts/get requests, inside the server's.
func (s *Server) AddPrompt(p Prompt, h PromptHandler, opts ...HandlerOption) {
	s.addPrompt(p, h, nil, opts)
}

func (s *Server) addPrompt(p Prompt, h PromptHandler, complete CompletionHandler, opts []HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for prompt %q", p.Name))
	}
	if p.Name == "" {
		panic("mcp: a prompt needs a name")
	}
	hc := newHandlerConfig(opts)
	e := &promptEntry{prompt: p, handler: h, complete: complete, call: chain(hc.interceptors, callMethod), listing: newListing(&hc)}
	if !s.prompts.add(p.Name, e) {
		panic(fmt.Sprintf("mcp: a prompt named %q is already registered", p.Name))
	}
	s.broadcast(notifPromptsListChanged, nil)
}

// routeGetPrompt names the prompt for interceptors and picks its registration's CallFunc.
func (s *Server) routeGetPrompt(req *Request) {
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return // handleGetPrompt reports the error
	}
	req.Name = p.Name
	if e, ok := s.prompts.get(p.Name); ok {
		req.serve = e.call
		if s.hiddenFrom(req.rs, &e.listing) {
			// Hidden from this caller (WithVisibility): as if it did not exist.
			req.serve = failWith(unknownPrompt(p.Name))
		}
	}
}

// RemovePrompt removes a prompt; it reports whether there was one.
func (s *Server) RemovePrompt(name string) bool {
	ok := s.prompts.remove(name)
	if ok {
		s.broadcast(notifPromptsListChanged, nil)
	}
	return ok
}

func (s *Server) handleListPrompts(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	token := rs.tokenInfo()
	items, next, err := s.prompts.pageOf(params, s.cfg.pageSize, func(p *promptEntry) bool { return p.listing.shows(ctx, token) })
	if err != nil {
		return nil, err
	}
	out := &ListPromptsResult{Prompts: make([]Prompt, 0, len(items)), NextCursor: next}
	page := make([]listHint, len(items))
	for i, p := range items {
		out.Prompts = append(out.Prompts, p.prompt)
		page[i] = p.listing.hint()
	}
	return s.listResult(rs, out, page, s.prompts.hints(func(p *promptEntry) listHint { return p.listing.hint() }))
}

// unknownPrompt is the error that answers prompts/get of a prompt the caller cannot see.
func unknownPrompt(name string) error {
	return Errorf(CodeInvalidParams, "unknown prompt %q; call prompts/list for the available prompts", truncate(name, 100))
}

// handleGetPrompt answers prompts/get with the prompt's messages for the arguments given,
// which must include its required ones.
func (s *Server) handleGetPrompt(ctx context.Context, _ *requestState, params json.RawMessage) (any, error) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	e, ok := s.prompts.get(p.Name)
	if !ok {
		return nil, unknownPrompt(p.Name)
	}
	if missing := e.prompt.missingArguments(p.Arguments); len(missing) > 0 {
		return nil, Errorf(CodeInvalidParams, "prompt %q is missing required arguments: %s", p.Name, strings.Join(missing, ", "))
	}
	res, err := e.handler(ctx, p.Arguments)
	if err != nil {
		return nil, err
	}
	if res.Messages == nil {
		res.Messages = []PromptMessage{}
	}
	return res, nil
}

// missingArguments returns the names of the prompt's required arguments that args lacks.
func (p *Prompt) missingArguments(args map[string]string) []string {
	var missing []string
	for _, a := range p.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	return missing
}
