"""A small application no one here wrote the parts of: the official `openai`
SDK answering questions through `probity sim serve`, traced by one of the
OpenAI instrumentations and exported by the standard OTLP/HTTP protobuf
exporter. Usage:

    python app.py INSTRUMENTATION SIM_URL OTLP_URL N [--tools] [--ids FILE]

INSTRUMENTATION is `openai-v2` (OpenTelemetry's own) or `openinference`.
Content capture is the environment's business (the instrumentation's own
opt-in variables), as in production. `--ids FILE` also writes each span's
trace and span ids (hex), one `TRACE SPAN` a line, as the SDK made them."""

import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)


class IdsFile(SpanExporter):
    """Each finished span's ids, appended to a file."""

    def __init__(self, path):
        self.path = path

    def export(self, spans):
        with open(self.path, "a") as f:
            for s in spans:
                c = s.get_span_context()
                f.write(f"{c.trace_id:032x} {c.span_id:016x}\n")
        return SpanExportResult.SUCCESS


def main():
    which, sim_url, otlp_url, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    tools = "--tools" in sys.argv
    provider = TracerProvider(resource=Resource.create({"service.name": f"otel-app-{which}"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url)))
    if "--ids" in sys.argv:
        provider.add_span_processor(SimpleSpanProcessor(IdsFile(sys.argv[sys.argv.index("--ids") + 1])))
    trace.set_tracer_provider(provider)
    if which == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    elif which == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        raise SystemExit(f"unknown instrumentation {which!r}")
    OpenAIInstrumentor().instrument(tracer_provider=provider)

    import openai

    client = openai.OpenAI(base_url=sim_url, api_key="sk-app-key-not-a-secret-0000")
    for i in range(n):
        messages = [
            {"role": "system", "content": "You answer support questions."},
            {"role": "user", "content": f"Question number {i}: how do I reset my password?"},
        ]
        kw = {}
        if tools and i % 5 == 0:
            kw["tools"] = [{"type": "function", "function": {
                "name": "lookup_account", "parameters": {"type": "object",
                "properties": {"user": {"type": "string"}}}}}]
        client.chat.completions.create(model="sim", messages=messages, **kw)
    provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    main()
