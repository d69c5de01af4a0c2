"""The OpenAI Agents SDK (`openai-agents`) with `OpenAIChatCompletionsModel`, and with its default
model class `OpenAIResponsesModel` (the Responses API), over an `AsyncOpenAI` client pointed at
`ingle serve`: an agent that calls a `@function_tool`. Tracing is disabled (it
would upload traces to OpenAI).

Qwen2.5-Coder 0.5B and 1.5B, greedy, call the tool again after its result instead of answering
(the same with the prompt rendered by the GGUF's own template with jinja2 on /v1/completions).
ingle drops a call already answered and has the model answer instead, the exchanges written as
plain turns (docs/tools.md, "A turn"): both then answer from the result (the 1.5B in
`scripts/test-clients --large`)."""

import asyncio
import json

import pytest
from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner,
                    function_tool, set_tracing_disabled)
from agents.items import ToolCallItem, ToolCallOutputItem
from openai import AsyncOpenAI

from common import KEY, QWEN, TIMEOUT, URL, WEATHER_QUESTION, is_paris

set_tracing_disabled(True)
calls = []
REPORT = "The weather in {} is sunny, 21 degrees celsius."


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    calls.append(city)
    return REPORT.format(city)


def weather_agent(model_class=OpenAIChatCompletionsModel, **kwargs):
    calls.clear()
    client = AsyncOpenAI(base_url=URL, api_key=KEY, max_retries=0, timeout=TIMEOUT)
    # tool_choice "required" on the first turn; the SDK resets it to auto once the tool has run
    # (reset_tool_choice=True).
    return Agent(name="Weather", instructions="You answer questions about the weather.",
                 tools=[get_weather],
                 model=model_class(model=QWEN, openai_client=client),
                 model_settings=ModelSettings(temperature=0, max_tokens=60, tool_choice="required"),
                 **kwargs)


def check_tool_result_is_the_answer(result):
    assert len(calls) == 1 and is_paris(calls[0]), calls
    kinds = [type(item) for item in result.new_items]
    assert kinds == [ToolCallItem, ToolCallOutputItem], kinds
    assert result.final_output == REPORT.format(calls[0])


@pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_sync(Agent(tools=[@function_tool], model=OpenAIChatCompletionsModel(...), tool_use_behavior=\"stop_on_first_tool\"))`")
def test_agent_calls_a_tool():
    agent = weather_agent(tool_use_behavior="stop_on_first_tool")
    check_tool_result_is_the_answer(Runner.run_sync(agent, WEATHER_QUESTION, max_turns=2))


@pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_streamed(...)`, the same agent streamed")
def test_agent_calls_a_tool_streamed():
    agent = weather_agent(tool_use_behavior="stop_on_first_tool")

    async def run():
        result = Runner.run_streamed(agent, WEATHER_QUESTION, max_turns=2)
        events = [event async for event in result.stream_events()]
        assert any(e.type == "raw_response_event" for e in events)
        return result

    check_tool_result_is_the_answer(asyncio.run(run()))


@pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_sync(...)` with the SDK's default model class, `OpenAIResponsesModel` (`POST /v1/responses`)")
def test_agent_calls_a_tool_over_responses():
    agent = weather_agent(OpenAIResponsesModel, tool_use_behavior="stop_on_first_tool")
    check_tool_result_is_the_answer(Runner.run_sync(agent, WEATHER_QUESTION, max_turns=2))


@pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_streamed(...)` with `OpenAIResponsesModel`: the Responses events streamed")
def test_agent_calls_a_tool_over_responses_streamed():
    agent = weather_agent(OpenAIResponsesModel, tool_use_behavior="stop_on_first_tool")

    async def run():
        result = Runner.run_streamed(agent, WEATHER_QUESTION, max_turns=2)
        events = [event async for event in result.stream_events()]
        kinds = {e.data.type for e in events if e.type == "raw_response_event"}
        assert {"response.created", "response.function_call_arguments.delta",
                "response.completed"} <= kinds, kinds
        return result

    check_tool_result_is_the_answer(asyncio.run(run()))


def auto_agent(model_class, **settings):
    """The agent as a new user writes it: `tool_choice` left to the model (auto), the model
    named without its `@local/` namespace (the SDK reads `@local` as a provider prefix)."""
    calls.clear()
    client = AsyncOpenAI(base_url=URL, api_key=KEY, max_retries=0, timeout=TIMEOUT)
    return Agent(name="Weather", instructions="You answer questions about the weather.",
                 tools=[get_weather],
                 model=model_class(model=QWEN.removeprefix("@local/"), openai_client=client),
                 model_settings=ModelSettings(temperature=0, **settings),
                 tool_use_behavior="stop_on_first_tool")


@pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_sync(...)`, `tool_choice` auto (the default) and `parallel_tool_calls=False`, over Chat Completions: one call, the turn ends there")
def test_agent_with_tool_choice_auto():
    agent = auto_agent(OpenAIChatCompletionsModel, parallel_tool_calls=False)
    check_tool_result_is_the_answer(Runner.run_sync(agent, WEATHER_QUESTION, max_turns=2))


def check_events(events):
    """Every output item of a Responses stream is whole: a function call names a tool and its
    arguments are a JSON object; a message has text."""
    items = [e.data.item for e in events
             if e.type == "raw_response_event" and e.data.type == "response.output_item.done"]
    assert items, "no output items"
    for item in items:
        if item.type == "function_call":
            assert item.name == "get_weather", item
            assert isinstance(json.loads(item.arguments), dict), item
        else:
            assert item.type == "message" and item.content[0].text.strip(), item


@pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_streamed(...)` with `OpenAIResponsesModel` and `tool_choice` auto (the default): every streamed item whole (a call's arguments never split into items)")
def test_agent_over_responses_with_tool_choice_auto():
    agent = auto_agent(OpenAIResponsesModel)

    async def run():
        result = Runner.run_streamed(agent, WEATHER_QUESTION, max_turns=2)
        check_events([event async for event in result.stream_events()])
        return result

    check_tool_result_is_the_answer(asyncio.run(run()))


class NoAnswer(Exception):
    """The run ended on a reply that does not use the tool's result."""


@pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_sync(...)` with the default `tool_use_behavior=\"run_llm_again\"`: the model answers from the tool's result")
def test_agent_answers_from_the_tool_result():
    try:
        result = Runner.run_sync(weather_agent(), WEATHER_QUESTION, max_turns=3)
    finally:
        assert calls and is_paris(calls[0]), calls  # the tool ran, with the city asked for
    answer = result.final_output
    if ("sunny" not in answer.lower() and "21" not in answer) or '"name"' in answer:
        raise NoAnswer(answer)
    assert calls == ["Paris"], calls


@pytest.mark.client("openai-agents", "openai-agents", "`Agent(model=\"qwen2.5-coder-0.5b-instruct\")` (the tag without `@local/`): a model named by a string, with `set_default_openai_client(AsyncOpenAI(base_url=URL))`: the model's name without its `@local/` namespace, which the SDK does not take for a provider")
def test_agent_names_its_model_by_a_string():
    from agents import set_default_openai_api, set_default_openai_client
    from agents.exceptions import UserError

    set_default_openai_client(AsyncOpenAI(base_url=URL, api_key=KEY, max_retries=0, timeout=TIMEOUT),
                              use_for_tracing=False)
    set_default_openai_api("chat_completions")
    settings = ModelSettings(temperature=0, max_tokens=60, tool_choice="required")
    # The tag itself is read as provider `@local`: why a name without `/` is served too.
    with pytest.raises(UserError):
        Runner.run_sync(Agent(name="Weather", model=QWEN, tools=[get_weather], model_settings=settings),
                        WEATHER_QUESTION, max_turns=2)
    calls.clear()
    agent = Agent(name="Weather", instructions="You answer questions about the weather.",
                  tools=[get_weather], model=QWEN.removeprefix("@local/"),
                  model_settings=settings, tool_use_behavior="stop_on_first_tool")
    check_tool_result_is_the_answer(Runner.run_sync(agent, WEATHER_QUESTION, max_turns=2))
