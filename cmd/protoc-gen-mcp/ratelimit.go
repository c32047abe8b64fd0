package main

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// rateLimit is one token bucket of a tool: its own (bucket "") or its service's.
type rateLimit struct {
	bucket              string
	calls, burst, every uint32 // every: the period in seconds
}

// rateLimits returns the buckets of rpc m's tool: its own limit, then its service's (one
// bucket, "service/<full name>", for all the service's tools), refusing a limit of no calls.
func rateLimits(m *protogen.Method, own, svc *mcpv1.RateLimit) ([]rateLimit, error) {
	var out []rateLimit
	for _, l := range []struct {
		bucket, option string
		rl             *mcpv1.RateLimit
	}{
		{"", "(mcp.v1.tool).rate_limit", own},
		{"service/" + string(m.Parent.Desc.FullName()), "(mcp.v1.service).rate_limit", svc},
	} {
		if l.rl == nil {
			continue
		}
		if l.rl.GetCalls() == 0 {
			return nil, fmt.Errorf("%s allows no calls: set calls to more than zero, or leave the option out for no limit", l.option)
		}
		out = append(out, rateLimit{bucket: l.bucket, calls: l.rl.GetCalls(), burst: l.rl.GetBurst(), every: l.rl.GetPeriodSeconds()})
		if out[len(out)-1].every == 0 {
			out[len(out)-1].every = 60
		}
	}
	return out, nil
}

// rateLimitsField writes a ToolSpec's RateLimits field when the tool has limits.
func rateLimitsField(g *protogen.GeneratedFile, limits []rateLimit) {
	if len(limits) == 0 {
		return
	}
	g.P("RateLimits: []", runtimePackage.Ident("RateLimit"), "{")
	for _, l := range limits {
		bucket := ""
		if l.bucket != "" {
			bucket = "Bucket: " + strconv.Quote(l.bucket) + ", "
		}
		burst := ""
		if l.burst != 0 {
			burst = ", Burst: " + strconv.FormatUint(uint64(l.burst), 10)
		}
		g.P("{", bucket, "Rate: ", runtimePackage.Ident("Rate"), "{Calls: ", l.calls, ", Period: ", l.every, " * ", timePackage.Ident("Second"), burst, "}},")
	}
	g.P("},")
}
