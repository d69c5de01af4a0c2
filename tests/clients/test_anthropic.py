"""The `anthropic` SDK against `ingle serve`'s Messages API: create, the stream helper, tools
over two turns, count_tokens and errors, on the chat models."""

import anthropic
import pytest

from common import CAPITAL, KEY, QWEN, SMOL, TIMEOUT, URL, WEATHER_QUESTION, is_paris

ROOT = URL.removesuffix("/v1")
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}


# anthropic 2.x has no `temperature` argument (the API dropped sampling options); ingle still
# takes it, so greedy decoding goes in the body.
GREEDY = {"temperature": 0}


def client():
    return anthropic.Anthropic(base_url=ROOT, api_key=KEY, timeout=TIMEOUT, max_retries=0)


@pytest.mark.client("Anthropic SDK", "anthropic", "`messages.create`")
def test_create():
    message = client().messages.create(
        model=SMOL, max_tokens=16, extra_body=GREEDY,
        messages=[{"role": "user", "content": CAPITAL}])
    assert message.type == "message" and message.role == "assistant"
    assert "paris" in message.content[0].text.lower(), message
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


@pytest.mark.client("Anthropic SDK", "anthropic", "`messages.stream` (`text_stream`, `get_final_message`)")
def test_stream_helper():
    with client().messages.stream(
            model=SMOL, max_tokens=24, extra_body=GREEDY, system="Answer in a short sentence.",
            messages=[{"role": "user", "content": CAPITAL}]) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == final.content[0].text
    assert "paris" in final.content[0].text.lower(), final
    assert final.usage.output_tokens > 0


@pytest.mark.client("Anthropic SDK", "anthropic", "`messages.create(tools=...)` over two turns (`tool_use`, `tool_result`)")
def test_tools_over_two_turns():
    c = client()
    question = {"role": "user", "content": WEATHER_QUESTION}
    first = c.messages.create(model=QWEN, max_tokens=64, extra_body=GREEDY, tools=[WEATHER],
                              tool_choice={"type": "any"}, messages=[question])
    assert first.stop_reason == "tool_use", first
    (call,) = [b for b in first.content if b.type == "tool_use"]
    assert call.name == "get_weather" and is_paris(call.input.get("city")), call
    second = c.messages.create(
        model=QWEN, max_tokens=48, extra_body=GREEDY, tools=[WEATHER],
        messages=[question, {"role": "assistant", "content": first.content},
                  {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": call.id,
                       "content": "The weather in Paris is sunny, 21 degrees celsius."},
                      # Qwen 0.5B answers a bare tool result by calling again; asked, it answers.
                      {"type": "text", "text": "Thanks. So, what is the weather in Paris? "
                                               "Answer in plain words."}]}])
    text = "".join(b.text for b in second.content if b.type == "text").lower()
    assert "sunny" in text or "21" in text, second


@pytest.mark.client("Anthropic SDK", "anthropic", "`messages.stream(tools=...)`: the call as `input_json_delta`")
def test_streamed_tool_use():
    with client().messages.stream(
            model=QWEN, max_tokens=64, extra_body=GREEDY, tools=[WEATHER],
            tool_choice={"type": "tool", "name": "get_weather"},
            messages=[{"role": "user", "content": WEATHER_QUESTION}]) as stream:
        final = stream.get_final_message()
    (call,) = [b for b in final.content if b.type == "tool_use"]
    assert is_paris(call.input.get("city")), final


@pytest.mark.client("Anthropic SDK", "anthropic", "`messages.create(output_config={\"format\": json_schema})`")
def test_structured_output():
    import json
    schema = {"type": "object", "properties": {"capital": {"type": "string"}},
              "required": ["capital"], "additionalProperties": False}
    message = client().messages.create(
        model=QWEN, max_tokens=32, extra_body=GREEDY,
        output_config={"format": {"type": "json_schema", "schema": schema}},
        messages=[{"role": "user", "content": CAPITAL}])
    assert is_paris(json.loads(message.content[0].text)["capital"]), message


@pytest.mark.client("Anthropic SDK", "anthropic", "`messages.count_tokens`")
def test_count_tokens():
    c = client()
    request = dict(model=SMOL, messages=[{"role": "user", "content": CAPITAL}])
    counted = c.messages.count_tokens(**request)
    message = c.messages.create(max_tokens=4, **request)
    # Anthropic's input_tokens leaves out what the prompt cache read (this prompt, just counted).
    usage = message.usage
    assert counted.input_tokens == usage.input_tokens + usage.cache_read_input_tokens > 0


@pytest.mark.client("Anthropic SDK", "anthropic", "errors: `BadRequestError`, `AuthenticationError`")
def test_errors():
    with pytest.raises(anthropic.BadRequestError) as error:
        client().messages.create(
            model=SMOL, max_tokens=16, thinking={"type": "enabled", "budget_tokens": 2048},
            messages=[{"role": "user", "content": CAPITAL}])
    assert error.value.body["type"] == "error"
    assert error.value.body["error"]["type"] == "invalid_request_error"
    assert "thinking" in error.value.body["error"]["message"]
    bad_key = anthropic.Anthropic(base_url=ROOT, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad_key.messages.create(model=SMOL, max_tokens=4,
                                messages=[{"role": "user", "content": CAPITAL}])
