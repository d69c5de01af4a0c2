"""client.responses in-process, on the default model (greedy): create as chat answers, the
events of a stream and the stream helper, a conversation continued with previous_response_id,
retrieve / input_items / delete, the async twins, parse, and errors naming the field."""

import asyncio

import pydantic
import pytest

import ingle

from conftest import MODEL

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
     "input[0].content[0].type"),
    (dict(input="Hi", max_output_tokens=0), "max_output_tokens"),
    (dict(), "input"),
])
def test_errors_name_the_field(client, kwargs, param):
    with pytest.raises(ingle.BadRequestError) as error:
        client.responses.create(model=MODEL, **kwargs)
    assert error.value.param == param
