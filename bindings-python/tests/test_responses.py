"""client.responses in-process, on the default model (greedy): create as chat answers, the
events of a stream and the stream helper, a conversation continued with previous_response_id,
retrieve / input_items / delete, the async twins, parse, and errors naming the field."""

import asyncio
from typing import Iterator

import pydantic
import pytest

import ingle

from conftest import MODEL, wait_idle

QUESTION = "Name the capital of France."


def test_create_answers_as_chat(client):
    response = client.responses.create(model=MODEL, input=QUESTION, instructions="Be brief.",
                                       temperature=0, max_output_tokens=30)
    chat = client.chat.completions.create(model=MODEL, temperature=0, max_tokens=30, messages=[
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}])
    assert isinstance(response, ingle.types.Response)
    assert response.output_text == chat.choices[0].message.content
    assert "Paris" in response.output_text
    assert response.status == "completed" and response.object == "response"
    assert response.output[0].content[0].type == "output_text"
    assert response.usage.input_tokens == chat.usage.prompt_tokens
    assert response.model_dump()["output"][0]["role"] == "assistant"


def test_stream_events_and_the_helper(client):
    events = list(client.responses.create(model=MODEL, input=QUESTION, temperature=0,
                                          max_output_tokens=20, stream=True))
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == events[-1].response.output_text
    with client.responses.stream(model=MODEL, input=QUESTION, temperature=0, max_output_tokens=20) as stream:
        helper_kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert helper_kinds == kinds
    assert final.output_text == text


def test_a_conversation_and_its_stored_responses(client):
    first = client.responses.create(model=MODEL, input="My name is Ada. Say hello.", temperature=0,
                                    max_output_tokens=30)
    second = client.responses.create(model=MODEL, input="What is my name?", temperature=0,
                                     max_output_tokens=30, previous_response_id=first.id)
    assert second.previous_response_id == first.id
    assert second.usage.input_tokens > first.usage.input_tokens
    assert client.responses.retrieve(first.id).output_text == first.output_text
    items = client.responses.input_items.list(second.id, order="asc")
    assert [item.content[0].text for item in items] == ["What is my name?"]
    assert client.responses.delete(first.id) is None
    with pytest.raises(ingle.NotFoundError):
        client.responses.retrieve(first.id)
    with pytest.raises(ingle.NotFoundError) as error:
        client.responses.create(model=MODEL, input="Hi", previous_response_id=first.id)
    assert error.value.param == "previous_response_id"


def test_async_create_stream_and_helper():
    async def run():
        client = ingle.AsyncOpenAI()
        whole = await client.responses.create(model=MODEL, input=QUESTION, temperature=0, max_output_tokens=20)
        stream = await client.responses.create(model=MODEL, input=QUESTION, temperature=0,
                                               max_output_tokens=20, stream=True)
        text = "".join([e.delta async for e in stream if e.type == "response.output_text.delta"])
        async with client.responses.stream(model=MODEL, input=QUESTION, temperature=0,
                                           max_output_tokens=20) as helper:
            final = await helper.get_final_response()
        retrieved = await client.responses.retrieve(whole.id)
        items = await client.responses.input_items.list(whole.id)
        await client.responses.delete(whole.id)
        return whole, text, final, retrieved, items

    whole, text, final, retrieved, items = asyncio.run(run())
    assert whole.output_text == text == final.output_text == retrieved.output_text
    assert items.data[0].role == "user"


class Capital(pydantic.BaseModel):
    city: str


def test_parse_follows_the_schema(client):
    parsed = client.responses.parse(model=MODEL, input="What is the capital of France? Answer in JSON.",
                                    text_format=Capital, temperature=0, max_output_tokens=40)
    assert isinstance(parsed.output_parsed, Capital)


@pytest.mark.parametrize("kwargs, param", [
    (dict(input="Hi", tools=[{"type": "web_search"}]), "tools[0].type"),
    (dict(input="Hi", background=True), "background"),
    (dict(input=[{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]),
     "input[0].content[0]"),
    (dict(input="Hi", max_output_tokens=0), "max_output_tokens"),
    (dict(), "input"),
])
def test_errors_name_the_field(client, kwargs, param):
    with pytest.raises(ingle.BadRequestError) as error:
        client.responses.create(model=MODEL, **kwargs)
    assert error.value.param == param


# --- Predictors written by users serve Responses with no code of their own -------------

@ingle.predictor(tag="@test/responses-echo")
def echo_words(messages: list[ingle.types.ChatCompletionMessageParam]) -> Iterator[str]:
    """Echoes the last message word by word."""
    for word in messages[-1]["content"].split():
        yield word + " "


@ingle.predictor(tag="@test/responses-breaks")
def breaks(messages: list[ingle.types.ChatCompletionMessageParam]) -> Iterator[str]:
    """Says one word, then fails."""
    yield "partial "
    raise RuntimeError("the predictor broke")


@pytest.fixture(scope="module")
def users(client):
    client.predictors.register(echo_words, breaks)
    return client


def test_a_users_chat_predictor_serves_responses(users):
    response = users.responses.create(model="@test/responses-echo", input="hello big world")
    assert response.output_text == "hello big world "
    again = users.responses.create(model="@test/responses-echo", input="and again",
                                   previous_response_id=response.id)
    assert again.output_text == "and again "
    streamed = [e.delta for e in users.responses.create(model="@test/responses-echo", input="a b",
                                                        stream=True)
                if e.type == "response.output_text.delta"]
    assert streamed == ["a ", "b "]


def test_a_failure_mid_stream_is_response_failed(users):
    events = list(users.responses.create(model="@test/responses-breaks", input="x", stream=True))
    assert [e.type for e in events][-3:] == ["response.content_part.done",
                                             "response.output_item.done", "response.failed"]
    failed = events[-1].response
    assert failed.status == "failed" and failed.error.code == "server_error"
    assert "the predictor broke" in failed.error.message
    assert failed.output_text == "partial "
    with pytest.raises(ingle.InternalServerError, match="the predictor broke"):
        users.responses.create(model="@test/responses-breaks", input="x")
    with users.responses.stream(model="@test/responses-breaks", input="x") as stream:
        with pytest.raises(ingle.InternalServerError, match="the predictor broke"):
            stream.get_final_response()
    with pytest.raises(ingle.NotFoundError):
        users.responses.retrieve(failed.id)
    # The client goes on.
    assert users.responses.create(model="@test/responses-echo", input="ok").output_text == "ok "


def test_input_tokens_count(client):
    counted = client.responses.input_tokens.count(model=MODEL, input=QUESTION, instructions="Be brief.")
    assert isinstance(counted, ingle.types.InputTokenCountResponse)
    response = client.responses.create(model=MODEL, input=QUESTION, instructions="Be brief.",
                                       max_output_tokens=2)
    assert counted.object == "response.input_tokens"
    assert counted.input_tokens == response.usage.input_tokens
    assert asyncio.run(ingle.AsyncOpenAI().responses.input_tokens.count(
        model=MODEL, input=QUESTION, instructions="Be brief.")).input_tokens == counted.input_tokens


# --- Hostile inputs ------------------------------------------------------------------------

@ingle.predictor(tag="@test/responses-count")
def count_messages(messages: list[ingle.types.ChatCompletionMessageParam]) -> Iterator[str]:
    """Says how many messages it was given."""
    yield str(len(messages))


def test_a_chain_of_a_thousand_turns(client):
    """Each stored response holds its whole conversation: a 1,000-long previous_response_id
    chain is one read per turn, whole at the end (1,000 inputs and 999 answers)."""
    client.predictors.register(count_messages)
    previous = None
    for turn in range(1000):
        response = client.responses.create(model="@test/responses-count", input=f"turn {turn}",
                                           previous_response_id=previous)
        previous = response.id
    assert response.output_text == "1999"
    # It reports no usage, so its input cannot be counted: said, naming the model.
    with pytest.raises(ingle.BadRequestError, match="does not report") as error:
        client.responses.input_tokens.count(model="@test/responses-count", input="x")
    assert error.value.param == "model"
    assert client.responses.input_items.list(previous).data[0].content[0].text == "turn 999"


def test_huge_and_unknown_inputs_are_clear_errors(client):
    with pytest.raises(ingle.BadRequestError) as error:
        client.responses.create(model=MODEL, input="Paris " * 200_000, max_output_tokens=2)
    assert error.value.param == "input" and error.value.code == "context_length_exceeded"
    for item, param in [({"type": "image_generation_call", "id": "x"}, "input[0].type"),
                        ({"type": "message", "role": "user", "content": [{"type": "input_audio"}]},
                         "input[0].content[0].input_audio.data"),
                        ({"type": "message", "role": "user", "content": [{"type": "input_file", "file_data": "x"}]},
                         "input[0].content[0].type"),
                        ({"type": "function_call_output", "output": "x"}, "input[0].call_id")]:
        with pytest.raises(ingle.BadRequestError) as error:
            client.responses.create(model=MODEL, input=[item])
        assert error.value.param == param, error.value
    assert client.responses.create(model=MODEL, input="Hi", max_output_tokens=2).status == "incomplete"


def test_leaving_a_response_stream_stops_generation(client):
    """`break` out of a streamed response, or leaving the helper's `with`, cancels the
    generation behind it (counted by the model's cancelled_requests), as a chat stream does."""
    long = dict(model=MODEL, input="Write a very long story about a ship.", max_output_tokens=500)
    before = wait_idle(client)["cancelled_requests"]
    for i, event in enumerate(client.responses.create(**long, stream=True)):
        if event.type == "response.output_text.delta" and i > 6:
            break
    assert wait_idle(client)["cancelled_requests"] == before + 1
    with client.responses.stream(**long) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                break
    assert wait_idle(client)["cancelled_requests"] == before + 2
