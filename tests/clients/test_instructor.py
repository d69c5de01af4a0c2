"""instructor on an `openai.OpenAI` client pointed at `ingle serve`: a pydantic model back from
`response_model=`, in `Mode.JSON_SCHEMA` (response_format) and `Mode.TOOLS` (a forced tool call),
whole and as partial objects streamed (`create_partial`)."""

import instructor
import openai
import pydantic
import pytest

from common import CITY_QUESTION, KEY, QWEN, SMOL, TIMEOUT, URL, is_paris

PROMPT = [{"role": "user", "content": CITY_QUESTION}]


class City(pydantic.BaseModel):
    city: str
    country: str


def client(mode):
    return instructor.from_openai(
        openai.OpenAI(base_url=URL, api_key=KEY, max_retries=0, timeout=TIMEOUT), mode=mode)


def create(mode):
    # max_retries=1: one attempt, no re-asking, so the first answer is the one checked.
    return client(mode).chat.completions.create(
        model=QWEN, messages=PROMPT, response_model=City, temperature=0, max_tokens=60,
        max_retries=1)


def create_partial(mode):
    partials = list(client(mode).chat.completions.create_partial(
        model=QWEN, messages=PROMPT, response_model=City, temperature=0, max_tokens=60,
        max_retries=1))
    assert len(partials) > 2, partials
    assert partials[0].country is None, "the first partial object is not yet complete"
    return partials[-1]


def check(city):
    assert is_paris(city.city) and "france" in city.country.lower(), city


@pytest.mark.client("instructor", "instructor", "`create(response_model=...)`, `Mode.JSON_SCHEMA`")
def test_json_schema():
    city = create(instructor.Mode.JSON_SCHEMA)
    assert isinstance(city, City)
    check(city)


@pytest.mark.client("instructor", "instructor", "`create(response_model=...)`, `Mode.TOOLS`")
def test_tools():
    city = create(instructor.Mode.TOOLS)
    assert isinstance(city, City)
    check(city)


@pytest.mark.client("instructor", "instructor", "`create_partial(response_model=...)`, `Mode.TOOLS` (streamed tool arguments)")
def test_partial_tools():
    check(create_partial(instructor.Mode.TOOLS))


@pytest.mark.client("instructor", "instructor", "`create_partial(response_model=...)`, `Mode.JSON_SCHEMA` (streamed content)")
def test_partial_json_schema():
    check(create_partial(instructor.Mode.JSON_SCHEMA))


class Person(pydantic.BaseModel):
    name: str
    age: int


@pytest.mark.client("instructor", "instructor", "`create(response_model=Person)`, `Mode.JSON_SCHEMA`, on SmolLM2: a schema that leaves `additionalProperties` open (pydantic's default) gets the listed properties only")
def test_json_schema_open_object_on_a_small_model():
    # Before objects were closed to their listed properties, SmolLM2 went on with `gender`,
    # `occupation`, `race`... until max_tokens, and instructor raised IncompleteOutputException.
    schema = Person.model_json_schema()
    assert "additionalProperties" not in schema, schema
    person = client(instructor.Mode.JSON_SCHEMA).chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Alice is 30 years old. Extract her."}],
        response_model=Person, temperature=0, max_tokens=60, max_retries=1)
    assert isinstance(person, Person)
    assert person.name.strip(), person
