package otelmcp

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// An Option configures an Interceptor.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	propagator     propagation.TextMapPropagator
	uriInSpanName  bool
	publicEndpoint bool
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.propagator == nil {
		c.propagator = otel.GetTextMapPropagator()
	}
	return c
}

// WithTracerProvider sets the TracerProvider the spans come from. The default is the global
// one (otel.GetTracerProvider) at the time NewInterceptor is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithMeterProvider sets the MeterProvider the duration histograms come from. The default is
// the global one (otel.GetMeterProvider) at the time NewInterceptor is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithPropagators sets the propagator that writes trace context into a client request's
// params._meta and reads it from a server request's. The default is the global one
// (otel.GetTextMapPropagator) at the time NewInterceptor is called; note that the global
// default propagates nothing until set, for example with
// otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagator = p })
}

// WithResourceURIInSpanName names the spans of resources/read, resources/subscribe and
// resources/unsubscribe "{mcp.method.name} {mcp.resource.uri}". The semantic conventions
// leave the URI out of span names by default, as URIs can be of high cardinality; it is
// always recorded as the mcp.resource.uri attribute.
func WithResourceURIInSpanName() Option {
	return optionFunc(func(c *config) { c.uriInSpanName = true })
}

// WithPublicEndpoint makes a server treat the trace context in _meta as untrusted: its spans
// start new traces and link to the client's span instead of being its children. Use it for
// servers open to clients outside your organization.
func WithPublicEndpoint() Option {
	return optionFunc(func(c *config) { c.publicEndpoint = true })
}
