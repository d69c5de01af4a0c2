"""LiteLLM's SDK with `model="openai/<tag>"` and `api_base` set to `ingle serve` (its route for any
OpenAI-compatible server)."""

import json

import litellm
import pytest

from common import (CAPITAL, EXTENSIONS, KEY, QWEN, TIMEOUT, URL, WEATHER_QUESTION, WEATHER_TOOL,
                    is_paris)

OPTIONS = dict(model=f"openai/{QWEN}", api_base=URL, api_key=KEY, temperature=0, max_tokens=40,
               timeout=TIMEOUT, num_retries=0)


@pytest.mark.client("LiteLLM", "litellm", "`completion(model=\"openai/<tag>\", api_base=...)`")
def test_completion():
    reply = litellm.completion(messages=[{"role": "user", "content": CAPITAL}], **OPTIONS)
    assert "paris" in reply.choices[0].message.content.lower(), reply
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.completion_tokens > 0


@pytest.mark.client("LiteLLM", "litellm", "`completion(..., stream=True)`")
def test_completion_streamed():
    chunks = list(litellm.completion(messages=[{"role": "user", "content": CAPITAL}], stream=True,
                                     **OPTIONS))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert len(chunks) > 2 and "paris" in text.lower(), text


@pytest.mark.client("LiteLLM", "litellm", "`completion(..., top_k=, min_p=, repetition_penalty=, chat_template_kwargs=)`")
def test_extensions():
    reply = litellm.completion(messages=[{"role": "user", "content": CAPITAL}], **EXTENSIONS,
                               **OPTIONS)
    assert "paris" in reply.choices[0].message.content.lower(), reply
    with pytest.raises(litellm.BadRequestError, match="top_k"):
        litellm.completion(messages=[{"role": "user", "content": CAPITAL}], top_k=-1, **OPTIONS)


@pytest.mark.client("LiteLLM", "litellm", "`completion(..., tools=..., tool_choice=\"required\")`")
def test_completion_tools():
    reply = litellm.completion(messages=[{"role": "user", "content": WEATHER_QUESTION}],
                               tools=[WEATHER_TOOL], tool_choice="required", **OPTIONS)
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert is_paris(json.loads(call.function.arguments).get("city")), call


@pytest.mark.client("LiteLLM", "litellm", "`completion(..., tools=..., stream=True)` and `stream_chunk_builder`")
def test_completion_tools_streamed():
    chunks = list(litellm.completion(messages=[{"role": "user", "content": WEATHER_QUESTION}],
                                     tools=[WEATHER_TOOL], tool_choice="required", stream=True,
                                     **OPTIONS))
    reply = litellm.stream_chunk_builder(chunks)
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert is_paris(json.loads(call.function.arguments).get("city")), call
