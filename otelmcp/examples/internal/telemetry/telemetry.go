// Package telemetry sets up the OpenTelemetry SDK of the example commands from the
// environment, with go.opentelemetry.io/contrib/exporters/autoexport: OTEL_TRACES_EXPORTER
// and OTEL_METRICS_EXPORTER choose the exporters (otlp by default; console prints to stdout;
// none), OTEL_EXPORTER_OTLP_* configure OTLP and OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
// the resource, with no code change.
package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Setup installs global tracer and meter providers that export as the environment says, and
// the W3C trace context and baggage propagators. service is the service.name unless
// OTEL_SERVICE_NAME sets another. The returned function flushes what is pending and shuts the
// providers down.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	spans, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: span exporter: %w", err)
	}
	metrics, err := autoexport.NewMetricReader(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: metric reader: %w", err), spans.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics), sdkmetric.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}, nil
}
