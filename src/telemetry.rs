//! OpenTelemetry traces, exported over OTLP/HTTP when the standard variables ask for it
//! (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SERVICE_NAME`,
//! default `toolgate`; the batch settings `OTEL_BSP_*`). Unset, nothing is set up and spans
//! cost what they cost without it.
//!
//! Callers are not trusted with sampling: unless `OTEL_TRACES_SAMPLER` chooses a sampler (a
//! `parentbased_*` one follows callers' flags), every request is sampled whatever the
//! `traceparent` it sent says; a span keeps at most 32 attributes and 64 events.

use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};

/// The tracer provider, when traces are to be exported; W3C trace context is then read from
/// callers and passed to upstreams.
pub fn provider() -> Option<SdkTracerProvider> {
    let wanted = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    if !wanted {
        return None;
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder().with_http().build() {
        Ok(exporter) => exporter,
        Err(err) => {
            eprintln!("warning: traces are not exported: {err}");
            return None;
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("toolgate");
    }
    let mut provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .with_max_attributes_per_span(32)
        .with_max_events_per_span(64);
    if std::env::var_os("OTEL_TRACES_SAMPLER").is_none() {
        provider = provider.with_sampler(Sampler::AlwaysOn);
    }
    let provider = provider.build();
    let propagator = TextMapCompositePropagator::new(vec![Box::new(TraceContextPropagator::new())]);
    opentelemetry::global::set_text_map_propagator(propagator);
    Some(provider)
}
