"""The Responses API of `ingle serve` through the official `openai` package: create, the
stream helper's typed events, retrieve, input items, delete, a conversation continued by
`previous_response_id`, function calls over two turns, structured output with `parse`, and
OpenAI-shaped errors naming the field."""

import json
import os

import openai
import pydantic
import pytest

CHAT = "@local/smollm2-135m-instruct"
QWEN = "@local/qwen2.5-coder-0.5b-instruct"


@pytest.fixture(scope="module")
def client():
    return openai.OpenAI(base_url=os.environ["INGLE_SERVE_URL"],
                         api_key=os.environ["INGLE_SERVE_KEY"], max_retries=0)


def test_create_retrieve_input_items_delete(client):
    response = client.responses.create(model=CHAT, input="Name the capital of France.",
                                       instructions="Answer in one sentence.", temperature=0,
                                       max_output_tokens=40, metadata={"case": "create"})
    assert isinstance(response, openai.types.responses.Response)
    assert response.status == "completed"
    assert "Paris" in response.output_text
    assert response.output[0].type == "message"
    assert response.output[0].content[0].type == "output_text"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.metadata == {"case": "create"}
    again = client.responses.retrieve(response.id)
    assert again.output_text == response.output_text and again.id == response.id
    items = client.responses.input_items.list(response.id)
    assert [item.role for item in items.data] == ["user"]
    assert items.data[0].content[0].text == "Name the capital of France."
    deleted = client.responses.delete(response.id)
    assert deleted is None or getattr(deleted, "deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


def test_stream_helper_events_in_order(client):
    with client.responses.stream(model=CHAT, input="Count from one to five.", temperature=0,
                                 max_output_tokens=30) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text and text == final.output_text
    # create(stream=True) gives the same events, typed.
    raw = client.responses.create(model=CHAT, input="Count from one to five.", temperature=0,
                                  max_output_tokens=30, stream=True)
    assert [event.type for event in raw] == kinds


def test_previous_response_id_continues_the_conversation(client):
    first = client.responses.create(model=CHAT, input="My name is Ada. Say hello.", temperature=0,
                                    max_output_tokens=30)
    second = client.responses.create(model=CHAT, input="What is my name?", temperature=0,
                                     max_output_tokens=30, previous_response_id=first.id)
    whole = client.responses.create(model=CHAT, temperature=0, max_output_tokens=30, store=False, input=[
        {"role": "user", "content": "My name is Ada. Say hello."},
        {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": "What is my name?"},
    ])
    assert second.output_text == whole.output_text
    assert second.previous_response_id == first.id
    with pytest.raises(openai.NotFoundError) as error:
        client.responses.create(model=CHAT, input="Hi", previous_response_id=whole.id)
    assert error.value.body["param"] == "previous_response_id"


def test_function_call_then_its_output(client):
    tools = [{"type": "function", "name": "get_weather", "description": "Get the current weather in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                             "required": ["city"]}}]
    first = client.responses.create(model=QWEN, input="What is the weather in Paris?", tools=tools,
                                    tool_choice="required", temperature=0, max_output_tokens=100)
    call = first.output[0]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments)["city"] == "Paris"
    second = client.responses.create(model=QWEN, tools=tools, temperature=0, max_output_tokens=60,
                                     previous_response_id=first.id, input=[
                                         {"type": "function_call_output", "call_id": call.call_id,
                                          "output": json.dumps({"temperature": 21, "sky": "sunny"})}])
    # Words a user can read, not the call again or a fragment of one.
    answer = second.output_text.strip()
    assert "21" in answer and not answer.startswith(("{", "[", "<")) and '"name"' not in answer, answer
    assert [item.type for item in second.output] == ["message"]


class City(pydantic.BaseModel):
    name: str
    country: str


def test_parse_with_a_pydantic_model(client):
    parsed = client.responses.parse(model=QWEN, input="Paris is a city in which country? Answer as JSON.",
                                    text_format=City, temperature=0, max_output_tokens=60)
    assert isinstance(parsed.output_parsed, City)
    assert parsed.output_parsed.country


def test_errors_name_the_field(client):
    cases = [
        (dict(input="Hi", tools=[{"type": "web_search"}]), "tools[0].type"),
        (dict(input="Hi", background=True), "background"),
        (dict(input=[{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/a.png"}]}]),
         "input[0].content[0]"),
        (dict(input="Hi", max_output_tokens=0), "max_output_tokens"),
    ]
    for kwargs, param in cases:
        with pytest.raises(openai.BadRequestError) as error:
            client.responses.create(model=CHAT, **kwargs)
        assert error.value.body["param"] == param, (kwargs, error.value.body)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_nothing")


def test_input_tokens_count(client):
    body = dict(model=CHAT, input="Name the capital of France.", instructions="Be brief.")
    counted = client.responses.input_tokens.count(**body)
    assert counted.object == "response.input_tokens"
    response = client.responses.create(**body, temperature=0, max_output_tokens=3)
    assert counted.input_tokens == response.usage.input_tokens
    with pytest.raises(openai.BadRequestError) as error:
        client.responses.input_tokens.count(model=CHAT, input="Hi", tools=[{"type": "web_search"}])
    assert error.value.body["param"] == "tools[0].type"
