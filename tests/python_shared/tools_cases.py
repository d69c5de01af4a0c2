"""Tool calls, structured output and logprobs, checked the same way on the ingle Python package
(bindings-python/tests/test_tools.py) and on `ingle serve` through the official `openai` package
(tests/serve/test_tools_openai.py). Every case takes a client with the OpenAI interface, and
validates what it gets against the `openai` package's pydantic types. Greedy, on
Qwen2.5-Coder-0.5B-Instruct (which can call tools) unless said."""

import json
from typing import List, Literal, Optional

import jsonschema
import pydantic
from openai.types import Completion as OpenAICompletion
from openai.types.chat import ChatCompletion as OpenAIChatCompletion
from openai.types.chat import ChatCompletionChunk as OpenAIChatCompletionChunk

QWEN = "@local/qwen2.5-coder-0.5b-instruct"
SMOL = "@local/smollm2-135m-instruct"
PARIS = [{"role": "user", "content": "What's the weather in Paris right now, in celsius?"}]
WEATHER = [{"type": "function", "function": {
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}]


def dump(obj):
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


def weather_call(client, **extra):
    return client.chat.completions.create(
        model=QWEN, messages=PARIS, tools=WEATHER, temperature=0, max_tokens=120, **extra)


def check_weather_arguments(arguments: str) -> dict:
    value = json.loads(arguments)
    jsonschema.validate(value, WEATHER[0]["function"]["parameters"])
    return value


def case_tool_call_whole_and_streamed(client):
    whole = weather_call(client)
    OpenAIChatCompletion.model_validate(dump(whole))
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather"
    assert call.id.startswith("call_")
    assert check_weather_arguments(call.function.arguments)["city"] == "Paris"

    chunks = list(weather_call(client, stream=True))
    for chunk in chunks:
        OpenAIChatCompletionChunk.model_validate(dump(chunk))
    deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
    assert all((c.choices[0].delta.content or "") == "" for c in chunks)
    assert [d.index for d in deltas] == [0] * len(deltas)
    assert deltas[0].id.startswith("call_") and deltas[0].type == "function"
    assert deltas[0].function.name == "get_weather"
    assert all(d.id is None and d.type is None and d.function.name is None for d in deltas[1:])
    assert len(deltas) > 2, "the arguments stream in fragments"
    arguments = "".join(d.function.arguments or "" for d in deltas)
    assert json.loads(arguments) == json.loads(call.function.arguments)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def case_tool_choice_none_and_a_model_without_tools(client):
    reply = weather_call(client, tool_choice="none")
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].finish_reason in ("stop", "length")
    try:
        client.chat.completions.create(model=SMOL, messages=PARIS, tools=WEATHER)
    except Exception as e:  # the package's and openai's BadRequestError
        assert type(e).__name__ == "BadRequestError", e
        assert "tools" in str(e)
    else:
        raise AssertionError("SmolLM2's template has no tools: expected an error")


# Six schemas: nested objects, arrays with min/max items, enums, bounded numbers, optional
# properties, $defs/$ref.
SCHEMAS = {
    "nested": ("Describe the city of Lyon.", {
        "type": "object", "properties": {
            "name": {"type": "string"},
            "location": {"type": "object", "properties": {
                "country": {"type": "string"}, "region": {"type": "string"}},
                "required": ["country", "region"], "additionalProperties": False}},
        "required": ["name", "location"], "additionalProperties": False}),
    "array": ("List some primary colours.", {
        "type": "object", "properties": {"colours": {
            "type": "array", "items": {"type": "string", "maxLength": 20},
            "minItems": 2, "maxItems": 4}},
        "required": ["colours"], "additionalProperties": False}),
    "enum": ("Is the sky blue on a clear day? Answer as JSON.", {
        "type": "object", "properties": {"answer": {"enum": ["yes", "no", "unsure"]}},
        "required": ["answer"], "additionalProperties": False}),
    "numbers": ("Rate the film Casablanca.", {
        "type": "object", "properties": {
            "stars": {"type": "integer", "minimum": 1, "maximum": 5},
            "score": {"type": "number", "minimum": 0, "maximum": 10}},
        "required": ["stars", "score"], "additionalProperties": False}),
    "optional": ("Give a user profile for Ada Lovelace.", {
        "type": "object", "properties": {
            "name": {"type": "string", "maxLength": 40},
            "nickname": {"type": "string", "maxLength": 20},
            "age": {"type": "integer", "minimum": 0, "maximum": 150}},
        "required": ["name"], "additionalProperties": False}),
    "defs": ("Two points of a triangle.", {
        "$defs": {"point": {"type": "object", "properties": {
            "x": {"type": "integer", "minimum": -100, "maximum": 100},
            "y": {"type": "integer", "minimum": -100, "maximum": 100}},
            "required": ["x", "y"], "additionalProperties": False}},
        "type": "object", "properties": {
            "a": {"$ref": "#/$defs/point"}, "b": {"$ref": "#/$defs/point"}},
        "required": ["a", "b"], "additionalProperties": False}),
}


def case_json_schema_outputs_validate(client, stream=False):
    for name, (question, schema) in SCHEMAS.items():
        # OpenAI's strict mode needs every property required: "optional" goes without it.
        response_format = {"type": "json_schema", "json_schema": {
            "name": name, "schema": schema, "strict": name != "optional"}}
        kwargs = dict(model=QWEN, messages=[{"role": "user", "content": question}],
                      temperature=0, max_tokens=200, response_format=response_format)
        if stream:
            text = "".join(c.choices[0].delta.content or ""
                           for c in client.chat.completions.create(stream=True, **kwargs)
                           if c.choices)
        else:
            reply = client.chat.completions.create(**kwargs)
            assert reply.choices[0].finish_reason == "stop", (name, reply)
            text = reply.choices[0].message.content
        jsonschema.validate(json.loads(text), schema)


def case_json_object_and_unsupported_keyword(client):
    reply = client.chat.completions.create(
        model=QWEN, messages=[{"role": "user", "content": "Describe a cat as JSON."}],
        temperature=0, max_tokens=150, response_format={"type": "json_object"})
    assert isinstance(json.loads(reply.choices[0].message.content), dict)
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    try:
        client.chat.completions.create(
            model=QWEN, messages=PARIS, response_format={
                "type": "json_schema", "json_schema": {"name": "t", "schema": schema}})
    except Exception as e:
        assert type(e).__name__ == "BadRequestError", e
        assert "uniqueItems" in str(e)
    else:
        raise AssertionError("uniqueItems cannot be enforced: expected an error")


class City(pydantic.BaseModel):
    name: str
    country: str
    population_millions: float = pydantic.Field(ge=0, le=100)
    landmarks: List[str] = pydantic.Field(max_length=3)
    climate: Literal["oceanic", "continental", "mediterranean", "other"]
    nickname: Optional[str]


def case_parse_with_a_pydantic_model(client):
    reply = client.chat.completions.parse(
        model=QWEN, messages=[{"role": "user", "content": "Tell me about Paris."}],
        temperature=0, max_tokens=200, response_format=City)
    city = reply.choices[0].message.parsed
    assert isinstance(city, City), city
    assert city.name


def case_logprobs(client):
    reply = client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Name the capital of France."}],
        temperature=0, max_tokens=8, logprobs=True, top_logprobs=5)
    OpenAIChatCompletion.model_validate(dump(reply))
    content = reply.choices[0].logprobs.content
    assert len(content) == reply.usage.completion_tokens
    assert "".join(bytes(t.bytes).decode("utf-8", "replace") for t in content) == reply.choices[0].message.content
    for token in content:
        assert len(token.top_logprobs) == 5 and token.top_logprobs[0].token == token.token
        assert token.logprob <= 0
    chunks = list(client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Name the capital of France."}],
        temperature=0, max_tokens=8, logprobs=True, top_logprobs=2, stream=True))
    streamed = [t for c in chunks if c.choices and c.choices[0].logprobs
                for t in c.choices[0].logprobs.content]
    assert [t.token for t in streamed] == [t.token for t in content]
    legacy = client.completions.create(model=SMOL, prompt="The capital of France is",
                                       temperature=0, max_tokens=5, logprobs=3)
    OpenAICompletion.model_validate(dump(legacy))
    lp = legacy.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 5
    assert "".join(lp.tokens) == legacy.choices[0].text
    assert all(len(top) <= 3 for top in lp.top_logprobs)


def case_n_choices(client):
    reply = client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Name a colour."}],
        temperature=1.0, seed=3, max_tokens=6, n=3)
    OpenAIChatCompletion.model_validate(dump(reply))
    assert [c.index for c in reply.choices] == [0, 1, 2]
    chunks = list(client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Name a colour."}],
        temperature=1.0, seed=3, max_tokens=6, n=3, stream=True))
    texts = ["", "", ""]
    for c in chunks:
        for choice in c.choices:
            texts[choice.index] += choice.delta.content or ""
    assert texts == [c.message.content for c in reply.choices]


# The weather tool as openai-agents sends it (pydantic's schema): greedy, Qwen 0.5B writes the
# call as bare JSON, then echoes this schema as another object (tests/tests/agent_turns.rs).
AGENTS_WEATHER = {"name": "get_weather", "description": "Get the current weather in a city.",
                  "parameters": {"properties": {"city": {"title": "City", "type": "string"}},
                                 "required": ["city"], "title": "get_weather_args",
                                 "type": "object", "additionalProperties": False}}
WEATHER_AGENT = [{"role": "system", "content": "You answer questions about the weather."},
                 {"role": "user", "content": "What is the weather in Paris?"}]


def case_an_agent_turn_is_one_whole_call(client):
    for stream in (False, True):
        kwargs = dict(model=QWEN, messages=WEATHER_AGENT, temperature=0, tool_choice="auto",
                      parallel_tool_calls=False,
                      tools=[{"type": "function", "function": AGENTS_WEATHER}])
        if stream:
            calls, content, finish = {}, "", None
            for chunk in client.chat.completions.create(stream=True, **kwargs):
                OpenAIChatCompletionChunk.model_validate(dump(chunk))
                choice = chunk.choices[0]
                content += choice.delta.content or ""
                finish = choice.finish_reason or finish
                for d in choice.delta.tool_calls or []:
                    calls[d.index] = calls.get(d.index, "") + (d.function.arguments or "")
            calls = list(calls.values())
        else:
            whole = client.chat.completions.create(**kwargs)
            OpenAIChatCompletion.model_validate(dump(whole))
            choice = whole.choices[0]
            calls = [c.function.arguments for c in choice.message.tool_calls]
            content, finish = choice.message.content or "", choice.finish_reason
        assert finish == "tool_calls" and content == "", (stream, content)
        assert [json.loads(a) for a in calls] == [{"city": "Paris"}], calls

    # The same turn over the Responses API: one function_call item, whole, in every event.
    request = dict(model=QWEN, instructions=WEATHER_AGENT[0]["content"],
                   input=WEATHER_AGENT[1]["content"], temperature=0, store=False,
                   tools=[dict(type="function", strict=True, **AGENTS_WEATHER)])
    response = client.responses.create(**request)
    (item,) = dump(response)["output"]
    assert item["type"] == "function_call" and item["name"] == "get_weather", item
    assert json.loads(item["arguments"]) == {"city": "Paris"}
    done = [dump(e)["item"] for e in client.responses.create(stream=True, **request)
            if dump(e)["type"] == "response.output_item.done"]
    assert [(i["type"], i["name"], json.loads(i["arguments"])) for i in done] == [
        ("function_call", "get_weather", {"city": "Paris"})], done


def case_a_repeated_call_ends_the_turn(client):
    call = lambda i: {"id": f"call_{i}", "type": "function",  # noqa: E731
                      "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    messages = [{"role": "user", "content": "What's the weather in Paris?"},
                {"role": "assistant", "content": None, "tool_calls": [call(1), call(2), call(3)]}]
    messages += [{"role": "tool", "tool_call_id": f"call_{i}", "content": "Sunny, 21 degrees."}
                 for i in (1, 2, 3)]
    messages.append({"role": "user", "content": "What's the weather in Rome?"})
    kwargs = dict(model=QWEN, messages=messages, temperature=0, max_tokens=200,
                  tools=[{"type": "function", "function": AGENTS_WEATHER}], tool_choice="required")
    guarded = client.chat.completions.create(**kwargs).choices[0]
    assert guarded.finish_reason == "tool_calls"
    assert [json.loads(c.function.arguments) for c in guarded.message.tool_calls] == [
        {"city": "Rome"}]
    allowed = client.chat.completions.create(
        extra_body={"allow_repeated_tool_calls": True}, **kwargs).choices[0]
    assert allowed.finish_reason == "length"
    assert len(allowed.message.tool_calls) >= 5, allowed.message.tool_calls


def case_an_open_object_schema_gets_its_listed_properties(client):
    class Person(pydantic.BaseModel):
        name: str
        age: int

    completion = client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Alice is 30 years old. Extract her."}],
        temperature=0, max_tokens=60, response_format={
            "type": "json_schema",
            "json_schema": {"name": "Person", "schema": Person.model_json_schema()}})
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert list(json.loads(choice.message.content)) == ["name", "age"], choice.message.content
