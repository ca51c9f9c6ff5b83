"""Traces and metrics derived from the event log: subscribers of the store, not code in the
loop (OpenTelemetry and Prometheus)."""

# Either of these turns tracing on (the OTLP exporter reads them and the other OTEL_* vars).
OTLP_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
