"""An agent no one here wrote the parts of: the OpenAI Agents SDK
(`openai-agents`) with one function tool, on the Chat Completions API of
`probity sim serve`, traced by `openinference-instrumentation-openai-agents`
and exported by the standard OTLP/HTTP protobuf exporter. Usage:

    python agents_app.py SIM_URL OTLP_URL N

Each of the N runs asks for the weather in a city: the simulator calls the
tool (it does when the user mentions the weather), the agent runs it, and
the simulator answers from the tool's result."""

import asyncio
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

CITIES = ["Oslo", "Lima", "Accra", "Hanoi", "Quito"]


async def main():
    sim_url, otlp_url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-agents-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url)))
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    import openai
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"12 C and rain in {city}"

    client = openai.AsyncOpenAI(base_url=sim_url, api_key="sk-app-key-not-a-secret-0000")
    agent = Agent(
        name="weather-agent",
        instructions="You answer questions about the weather, with the get_weather tool.",
        model=OpenAIChatCompletionsModel(model="sim", openai_client=client),
        tools=[get_weather],
    )
    for i in range(n):
        result = await Runner.run(agent, f"What is the weather in {CITIES[i % len(CITIES)]}?", max_turns=4)
        assert result.final_output, result
    provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
