"""``ingle.Anthropic`` / ``AsyncAnthropic``: Anthropic's Messages API in this process, as the
``anthropic`` client has it (create, the stream helper, count_tokens, errors), its answers
checked against the anthropic package's own types."""

import asyncio
from typing import Iterator

import anthropic
import pydantic
import pytest

import ingle
from ingle import predictor
from ingle.types import ChatCompletionMessageParam

from conftest import MODEL, wait_idle

QWEN = "@local/qwen2.5-coder-0.5b-instruct"  # SmolLM's template has no place for tools

CAPITAL = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
# anthropic 2.x dropped `temperature` from its arguments; ingle takes it, in the body.
GREEDY = {"temperature": 0}
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
EVENTS = pydantic.TypeAdapter(anthropic.types.RawMessageStreamEvent)


@pytest.fixture(scope="module")
def claude() -> ingle.Anthropic:
    return ingle.Anthropic(api_key="ignored", max_retries=0)


def test_create_is_anthropics_message(claude):
    message = claude.messages.create(model=MODEL, max_tokens=16, messages=CAPITAL, extra_body=GREEDY)
    typed = anthropic.types.Message.model_validate(message.model_dump())
    assert typed.type == "message" and typed.role == "assistant" and typed.model == MODEL
    assert "paris" in message.content[0].text.lower(), message
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert message.usage.input_tokens + message.usage.cache_read_input_tokens > 0
    assert message.usage.output_tokens > 0


def test_stream_helper_agrees_with_create(claude):
    whole = claude.messages.create(model=MODEL, max_tokens=24, messages=CAPITAL, extra_body=GREEDY)
    with claude.messages.stream(model=MODEL, max_tokens=24, messages=CAPITAL, extra_body=GREEDY) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
        assert stream.get_final_text() == "".join(pieces)
    assert "".join(pieces) == whole.content[0].text
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens
    anthropic.types.Message.model_validate(final.model_dump())


def test_stream_events_are_the_helpers(claude):
    with claude.messages.stream(model=MODEL, max_tokens=12, messages=CAPITAL, extra_body=GREEDY) as stream:
        events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
    # Each text delta is followed by the helper's `text` event with the text so far.
    deltas = [i for i, k in enumerate(kinds) if k == "content_block_delta"]
    assert deltas and all(kinds[i + 1] == "text" for i in deltas), kinds
    last_text = [e for e in events if e.type == "text"][-1]
    stop = next(e for e in events if e.type == "content_block_stop")
    assert stop.content_block.text == last_text.snapshot
    assert events[-1].message.content[0].text == last_text.snapshot
    assert events[-1].message.stop_reason in ("end_turn", "max_tokens")


def test_raw_events_are_anthropics(claude):
    raw = list(claude.messages.create(model=MODEL, max_tokens=8, messages=CAPITAL, stream=True,
                                      extra_body=GREEDY))
    kinds = [e.type for e in raw]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
    assert "ping" not in kinds  # the anthropic client skips it too
    assert {"content_block_start", "content_block_delta", "content_block_stop", "message_delta"} <= set(kinds)
    for event in raw:
        EVENTS.validate_python(event.model_dump(exclude_none=True))


def test_tools_over_two_turns(claude):
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    forced = {"type": "tool", "name": "get_weather"}
    with claude.messages.stream(model=QWEN, max_tokens=64, messages=question, tools=[WEATHER],
                                tool_choice=forced, extra_body=GREEDY) as stream:
        events = list(stream)
        call = stream.get_final_message()
    assert call.stop_reason == "tool_use", call
    use = next(block for block in call.content if block.type == "tool_use")
    assert use.name == "get_weather" and isinstance(use.input, dict) and "city" in use.input
    snapshots = [e.snapshot for e in events if e.type == "input_json"]
    assert snapshots and snapshots[-1] == use.input
    answer = claude.messages.create(
        model=QWEN, max_tokens=32, tools=[WEATHER], extra_body=GREEDY,
        messages=question + [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in call.content]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": "Sunny, 24 degrees."},
                # Qwen 0.5B answers a bare tool result by calling again; asked, it answers.
                {"type": "text", "text": "Thanks. So, what is the weather in Paris? Answer in plain words."}]},
        ])
    text = "".join(b.text for b in answer.content if b.type == "text").lower()
    assert "sunny" in text or "24" in text, answer


def test_count_tokens_is_what_create_reads(claude):
    counted = claude.messages.count_tokens(model=MODEL, messages=CAPITAL, system="Be brief.")
    anthropic.types.MessageTokensCount.model_validate(counted.model_dump())
    message = claude.messages.create(model=MODEL, max_tokens=4, messages=CAPITAL, system="Be brief.",
                                     extra_body=GREEDY)
    usage = message.usage
    assert counted.input_tokens == usage.input_tokens + usage.cache_read_input_tokens


def test_errors_are_anthropics_and_the_client_goes_on(claude):
    with pytest.raises(ingle.BadRequestError) as missing:
        claude.messages.create(model=MODEL, messages=CAPITAL)
    assert missing.value.status_code == 400 and missing.value.param == "max_tokens"
    assert missing.value.body == {"type": "error", "error": {
        "type": "invalid_request_error", "message": missing.value.message}}
    with pytest.raises(ingle.NotFoundError) as unknown:
        claude.messages.create(model="@nobody/nothing", max_tokens=4, messages=CAPITAL)
    assert unknown.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(ingle.BadRequestError) as image:
        claude.messages.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}])
    assert image.value.param.startswith("messages[0].content[0]"), image.value.param
    with pytest.raises(ingle.BadRequestError):
        with claude.messages.stream(model=MODEL, max_tokens=-1, messages=CAPITAL) as stream:
            stream.until_done()
    assert claude.messages.create(model=MODEL, max_tokens=4, messages=CAPITAL).content


def test_leaving_a_stream_early_stops_generation(claude):
    openai_side = ingle.OpenAI()
    long = [{"role": "user", "content": "Write a very long story about a dragon."}]
    with claude.messages.stream(model=MODEL, max_tokens=1500, messages=long) as stream:
        for _ in zip(range(5), stream.text_stream):
            pass
    wait_idle(openai_side)


def test_async_create_and_stream():
    async def main():
        claude = ingle.AsyncAnthropic()
        whole = await claude.messages.create(model=MODEL, max_tokens=16, messages=CAPITAL, extra_body=GREEDY)
        async with claude.messages.stream(model=MODEL, max_tokens=16, messages=CAPITAL,
                                          extra_body=GREEDY) as stream:
            pieces = [piece async for piece in stream.text_stream]
            final = await stream.get_final_message()
        raw = [e.type async for e in await claude.messages.create(
            model=MODEL, max_tokens=4, messages=CAPITAL, stream=True)]
        counted = await claude.messages.count_tokens(model=MODEL, messages=CAPITAL)
        return whole, "".join(pieces), final, raw, counted

    whole, text, final, raw, counted = asyncio.run(main())
    assert text == whole.content[0].text == final.content[0].text
    assert raw[0] == "message_start" and raw[-1] == "message_stop"
    assert counted.input_tokens > 0


@predictor(tag="@test/anthropic-echo")
def echo(messages: list[ChatCompletionMessageParam]) -> Iterator[str]:
    """Echoes the last message's text word by word."""
    content = messages[-1]["content"]
    text = content if isinstance(content, str) else " ".join(p["text"] for p in content)
    for word in text.split():
        yield word + " "


def test_a_users_chat_predictor_serves_messages():
    claude = ingle.Anthropic(predictors=[echo])
    message = claude.messages.create(model="@test/anthropic-echo", max_tokens=16,
                                     messages=[{"role": "user", "content": "hello big world"}])
    assert message.content[0].text == "hello big world "
    blocks = [{"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}]
    with claude.messages.stream(model="@test/anthropic-echo", max_tokens=16, messages=blocks) as stream:
        assert stream.get_final_text().split() == ["one", "two"]


def test_breaking_out_of_the_helper_keeps_the_stream_for_get_final_message(claude):
    with claude.messages.stream(model=MODEL, max_tokens=16, messages=CAPITAL, extra_body=GREEDY) as stream:
        for event in stream:
            if event.type == "text":
                break
        final = stream.get_final_message()
    whole = claude.messages.create(model=MODEL, max_tokens=16, messages=CAPITAL, extra_body=GREEDY)
    assert final.content[0].text == whole.content[0].text
    with claude.messages.stream(model=MODEL, max_tokens=16, messages=CAPITAL) as stream:
        next(iter(stream))
        stream.close()
        with pytest.raises(ingle.AnthropicError, match="closed before the message ended"):
            stream.get_final_message()


class Capital(pydantic.BaseModel):
    capital: str


def test_output_format_parses_into_the_type(claude):
    question = [{"role": "user", "content": "What is the capital of France? Answer in JSON."}]
    message = claude.messages.parse(model=QWEN, max_tokens=32, messages=question,
                                    output_format=Capital, extra_body=GREEDY)
    assert isinstance(message.parsed_output, Capital), message
    assert message.parsed_output.capital.lower().startswith("paris")
    assert message.content[0].parsed_output == message.parsed_output
    with claude.messages.stream(model=QWEN, max_tokens=32, messages=question,
                                output_format=Capital, extra_body=GREEDY) as stream:
        assert stream.get_final_message().parsed_output == message.parsed_output
    with pytest.raises(ingle.BadRequestError) as wrong:
        claude.messages.create(model=QWEN, max_tokens=8, messages=question, output_format={"type": "x"})
    assert wrong.value.param == "output_format" and wrong.value.body["type"] == "error"


def test_argument_errors_are_anthropic_shaped_too(claude):
    with pytest.raises(ingle.BadRequestError) as surrogate:
        claude.messages.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "\ud800"}])
    assert surrogate.value.body["type"] == "error", surrogate.value.body
    with pytest.raises(ingle.BadRequestError) as streamed:
        claude.messages.create(model=MODEL, max_tokens=4, messages=CAPITAL, stream="yes")
    assert streamed.value.body["error"]["type"] == "invalid_request_error"


@predictor(tag="@test/anthropic-fails")
def fails_midway(messages: list[ChatCompletionMessageParam]) -> Iterator[str]:
    """Says one word, then fails."""
    yield "Hello "
    raise RuntimeError("the predictor broke")


def test_a_failure_after_the_stream_began_is_raised_as_the_sdk_raises_it():
    claude = ingle.Anthropic(predictors=[fails_midway])
    with claude.messages.stream(model="@test/anthropic-fails", max_tokens=8,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        texts = []
        with pytest.raises(ingle.InternalServerError) as broken:
            for text in stream.text_stream:
                texts.append(text)
    assert texts == ["Hello "]
    assert broken.value.body["type"] == "error" and "broke" in broken.value.body["error"]["message"]
    raw = claude.messages.create(model="@test/anthropic-fails", max_tokens=8, stream=True,
                                 messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ingle.InternalServerError):
        list(raw)
