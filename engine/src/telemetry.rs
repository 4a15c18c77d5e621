//! The W3C trace context of calls (when traces are exported, see the binary's `telemetry`):
//! taken from what a caller sent, and passed to MCP upstreams in a request's `_meta`
//! (SEP-414). With no exporter set up the propagator is a no-op: nothing is read or written.

use std::collections::HashMap;

use opentelemetry::propagation::Injector;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Makes `span` a child of the W3C trace context a caller sent, if it sent one.
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
