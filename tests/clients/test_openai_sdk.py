"""The `openai` package's helpers on top of chat completions: `chat.completions.stream()` (the
event stream that parses tool arguments and structured output as they arrive) and `parse()`."""

import json

import openai
import pydantic
import pytest

from common import CITY_QUESTION, KEY, QWEN, TIMEOUT, URL, WEATHER_QUESTION, is_paris

client = openai.OpenAI(base_url=URL, api_key=KEY, max_retries=0, timeout=TIMEOUT)


class GetWeather(pydantic.BaseModel):
    """Get the current weather in a city."""
    city: str


class City(pydantic.BaseModel):
    city: str
    country: str


@pytest.mark.client("openai SDK", "openai", "`chat.completions.stream()` with a tool (`pydantic_function_tool`)")
def test_stream_helper_with_tools():
    with client.chat.completions.stream(
            model=QWEN, messages=[{"role": "user", "content": WEATHER_QUESTION}],
            tools=[openai.pydantic_function_tool(GetWeather)], tool_choice="required",
            temperature=0, max_tokens=60) as stream:
        events = list(stream)
        final = stream.get_final_completion()
    done = [e for e in events if e.type == "tool_calls.function.arguments.done"]
    assert len(done) == 1, [e.type for e in events]
    assert done[0].name == "GetWeather"
    assert isinstance(done[0].parsed_arguments, GetWeather)
    assert is_paris(done[0].parsed_arguments.city)
    deltas = [e for e in events if e.type == "tool_calls.function.arguments.delta"]
    assert "".join(e.arguments_delta for e in deltas) == done[0].arguments
    (call,) = final.choices[0].message.tool_calls
    assert final.choices[0].finish_reason == "tool_calls"
    assert call.function.parsed_arguments == done[0].parsed_arguments
    assert json.loads(call.function.arguments) == {"city": done[0].parsed_arguments.city}


@pytest.mark.client("openai SDK", "openai", "`chat.completions.stream()` with `response_format=` a pydantic model")
def test_stream_helper_structured_output():
    with client.chat.completions.stream(
            model=QWEN, messages=[{"role": "user", "content": CITY_QUESTION}],
            response_format=City, temperature=0, max_tokens=60) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_completion()
    assert "content.delta" in kinds and "content.done" in kinds
    city = final.choices[0].message.parsed
    assert isinstance(city, City)
    assert is_paris(city.city), city


@pytest.mark.client("openai SDK", "openai", "`chat.completions.parse()` with `response_format=` a pydantic model")
def test_parse_structured_output():
    reply = client.chat.completions.parse(
        model=QWEN, messages=[{"role": "user", "content": CITY_QUESTION}],
        response_format=City, temperature=0, max_tokens=60)
    city = reply.choices[0].message.parsed
    assert isinstance(city, City)
    assert is_paris(city.city), city


class Place(pydantic.BaseModel):
    name: str
    country: str
    population: int


@pytest.mark.client("openai SDK", "openai", "`chat.completions.parse()`, a model with an unbounded `int` (\"Describe Lisbon.\")")
def test_parse_unbounded_integer():
    # Greedy, the model writes digits until max_tokens unless the grammar bounds them; the SDK
    # then raises LengthFinishReasonError.
    reply = client.chat.completions.parse(
        model=QWEN, messages=[{"role": "user", "content": "Describe Lisbon."}],
        response_format=Place, temperature=0, max_tokens=80)
    assert reply.choices[0].finish_reason == "stop"
    place = reply.choices[0].message.parsed
    assert isinstance(place, Place) and "lisbo" in place.name.lower(), place
