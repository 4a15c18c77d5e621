//! The W3C trace context of calls (when traces are exported, see the binary's `telemetry`):
//! taken from what a caller sent, and passed to MCP upstreams in a request's `_meta`
//! (SEP-414). With no exporter set up the propagator is a no-op: nothing is read or written.

use std::collections::HashMap;

use opentelemetry::propagation::Injector;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The most bytes of a caller's value (a tool name, a path, a request id) a span keeps: what
/// a caller sends can be megabytes, and every exported span would carry it.
const SPAN_VALUE_BYTES: usize = 256;

/// `value` cut to what a span keeps of it, on a character boundary.
pub fn bounded(value: &str) -> &str {
    let mut end = value.len().min(SPAN_VALUE_BYTES);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
}

/// Makes `span` a child of the W3C trace context a caller sent, if it sent one. The caller's
/// context gives the trace and the parent span; whether the span is sampled is Toolgate's
/// choice (its sampler ignores a caller's `sampled` flag unless `OTEL_TRACES_SAMPLER` says
/// otherwise), so an untrusted caller cannot turn tracing off for its requests.
pub fn follow(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(traceparent) = traceparent else { return };
    let mut carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    if let Some(tracestate) = tracestate {
        carrier.insert("tracestate".to_string(), tracestate.to_string());
    }
    let context = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
    let _ = span.set_parent(context);
}

/// `span`'s trace context as W3C fields (`traceparent`, and `tracestate` when there is one);
/// empty when traces are not exported.
pub fn context_of(span: &tracing::Span) -> Vec<(String, String)> {
    struct Fields(Vec<(String, String)>);
    impl Injector for Fields {
        fn set(&mut self, key: &str, value: String) {
            self.0.push((key.to_string(), value));
        }
    }
    let mut fields = Fields(Vec::new());
    let context = span.context();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&context, &mut fields));
    fields.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_keeps_a_bounded_part_of_a_callers_value() {
        assert_eq!(bounded("list_directory"), "list_directory");
        let long = "é".repeat(200);
        let kept = bounded(&long);
        assert!(kept.len() <= SPAN_VALUE_BYTES && long.starts_with(kept), "{}", kept.len());
        assert_eq!(kept.len(), 256);
        assert_eq!(bounded(&"a".repeat(10_000)).len(), SPAN_VALUE_BYTES);
    }
}
