package main

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newTracerProvider returns the OpenTelemetry SDK's TracerProvider, which
// exports every span as JSON to file ("-" for standard output) when file is
// set, and over OTLP/gRPC when otlp is set (to the collector the standard
// OTEL_EXPORTER_OTLP_* variables name; https://localhost:4317 by default), and a
// func that flushes the spans not exported yet and stops it.
func newTracerProvider(ctx context.Context, file string, otlp bool) (*sdktrace.TracerProvider, func() error, error) {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "gateway-platform"))),
	}
	var closeFile func() error
	if file != "" {
		var w io.Writer = os.Stdout
		if file != "-" {
			f, err := os.Create(file)
			if err != nil {
				return nil, nil, err
			}
			w, closeFile = f, f.Close
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if otlp {
		exp, err := otlptracegrpc.New(ctx)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := tp.Shutdown(ctx)
		if closeFile != nil {
			err = errors.Join(err, closeFile())
		}
		return err
	}
	return tp, shutdown, nil
}
