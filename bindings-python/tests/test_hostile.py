"""Hostile and malformed arguments: each is an ``ingle.OpenAIError`` (a ``BadRequestError``
naming the argument, or what the engine answers), never a bare Python error or a crash, and
the client serves a normal request afterwards. The sync and the async client alike."""

import asyncio
import json
import math

import numpy as np
import pytest

import ingle
from conftest import FRANCE, MODEL

EMBEDDING = "@local/all-minilm-l6-v2"
NAN, INF = float("nan"), float("inf")
SURROGATE = "\ud800"


def user(content):
    return [{"role": "user", "content": content}]


def chat(**params):
    request = dict(model=MODEL, messages=FRANCE, max_tokens=4, temperature=0)
    request.update(params)
    return lambda c: c.chat.completions.create(**request)


def chat_without(name):
    request = dict(model=MODEL, messages=FRANCE, max_tokens=4, temperature=0)
    del request[name]
    return lambda c: c.chat.completions.create(**request)


def completion(**params):
    request = dict(model=MODEL, prompt="Hello", max_tokens=4)
    request.update(params)
    return lambda c: c.completions.create(**request)


def embedding(**params):
    request = dict(model=EMBEDDING, input="Hello")
    request.update(params)
    return lambda c: c.embeddings.create(**request)


def circular():
    messages = []
    messages.append(messages)
    return messages


def nested(depth):
    value = "x"
    for _ in range(depth):
        value = [value]
    return value


class Opaque:
    pass


# (id, call, exception class, param). A call's argument is the client, sync or async.
CASES = [
    # Lone surrogates, wherever a string goes.
    ("retrieve-surrogate", lambda c: c.models.retrieve(SURROGATE), ingle.BadRequestError, "model"),
    ("metrics-surrogate", lambda c: c.metrics("a" + SURROGATE), ingle.BadRequestError, "model"),
    ("model-surrogate", chat(model=SURROGATE), ingle.BadRequestError, "model"),
    ("content-surrogate", chat(messages=user("hi \udfff")), ingle.BadRequestError, "messages[0].content"),
    (
        "content-part-surrogate",
        chat(messages=user([{"type": "text", "text": SURROGATE}])),
        ingle.BadRequestError,
        "messages[0].content[0].text",
    ),
    (
        "key-surrogate",
        chat(messages=[{"role": "user", "content": "hi", SURROGATE: 1}]),
        ingle.BadRequestError,
        "messages[0]",
    ),
    ("stop-surrogate", chat(stop=["ok", SURROGATE]), ingle.BadRequestError, "stop[1]"),
    ("stop-string-surrogate", chat(stop=SURROGATE), ingle.BadRequestError, "stop"),
    ("user-surrogate", chat(user=SURROGATE), ingle.BadRequestError, "user"),
    ("stream-surrogate", chat(messages=user(SURROGATE), stream=True), ingle.BadRequestError, "messages[0].content"),
    ("prompt-surrogate", completion(prompt=SURROGATE), ingle.BadRequestError, "prompt"),
    ("input-surrogate", embedding(input=SURROGATE), ingle.BadRequestError, "input"),
    ("input-list-surrogate", embedding(input=["ok", SURROGATE]), ingle.BadRequestError, "input[1]"),
    (
        "tag-surrogate",
        lambda c: c.predictions.create(tag=SURROGATE, inputs={"prompt": "Hi"}),
        ingle.BadRequestError,
        "tag",
    ),
    (
        "inputs-surrogate",
        lambda c: c.predictions.create(tag=MODEL, inputs={"prompt": SURROGATE}),
        ingle.BadRequestError,
        "prompt",
    ),
    (
        "inputs-surrogate-stream",
        lambda c: c.predictions.stream(tag=MODEL, inputs={"prompt": SURROGATE}),
        ingle.BadRequestError,
        "prompt",
    ),
    ("extra-body-surrogate", chat(extra_body={"user": SURROGATE}), ingle.BadRequestError, "user"),
    # Numbers JSON cannot hold: never NaN on the wire, never a silent default.
    ("max-tokens-nan", chat(max_tokens=NAN), ingle.BadRequestError, "max_tokens"),
    ("temperature-inf", chat(temperature=INF), ingle.BadRequestError, "temperature"),
    ("top-p-minus-inf", chat(top_p=-INF), ingle.BadRequestError, "top_p"),
    ("content-nan", chat(messages=user(NAN)), ingle.BadRequestError, "messages[0].content"),
    (
        "schema-inf",
        chat(response_format={"type": "json_schema", "json_schema": {"schema": {"maximum": INF}}}),
        ingle.BadRequestError,
        "response_format.json_schema.schema.maximum",
    ),
    ("numpy-nan", chat(temperature=np.float32("nan")), ingle.BadRequestError, "temperature"),
    ("completion-nan", completion(temperature=NAN), ingle.BadRequestError, "temperature"),
    ("input-nan", embedding(input=[NAN]), ingle.BadRequestError, "input[0]"),
    (
        "inputs-nan",
        lambda c: c.predictions.create(tag=MODEL, inputs={"prompt": "Hi", "max_tokens": NAN}),
        ingle.BadRequestError,
        "max_tokens",
    ),
    ("extra-body-nan", chat(extra_body={"temperature": NAN}), ingle.BadRequestError, "temperature"),
    # Wrong types.
    ("retrieve-none", lambda c: c.models.retrieve(None), ingle.BadRequestError, "model"),
    ("retrieve-int", lambda c: c.models.retrieve(42), ingle.BadRequestError, "model"),
    ("retrieve-bytes", lambda c: c.models.retrieve(MODEL.encode()), ingle.BadRequestError, "model"),
    ("tag-none", lambda c: c.predictions.create(tag=None), ingle.BadRequestError, "tag"),
    ("inputs-list", lambda c: c.predictions.create(tag=MODEL, inputs=[1]), ingle.BadRequestError, "inputs"),
    ("model-int", chat(model=1), ingle.BadRequestError, "model"),
    ("messages-str", chat(messages="x"), ingle.BadRequestError, "messages"),
    ("max-tokens-str", chat(max_tokens="5"), ingle.BadRequestError, "max_tokens"),
    ("max-tokens-huge", chat(max_tokens=10**30), ingle.BadRequestError, "max_tokens"),
    ("stream-str", chat(stream="yes"), ingle.BadRequestError, "stream"),
    ("extra-body-list", chat(extra_body=[1]), ingle.BadRequestError, "extra_body"),
    ("seed-object", chat(seed=object()), ingle.BadRequestError, "seed"),
    ("content-opaque", chat(messages=user(Opaque())), ingle.BadRequestError, "messages[0].content"),
    ("content-bytes", chat(messages=user(b"hi")), ingle.BadRequestError, "messages[0].content"),
    ("key-object", chat(messages=[{"role": "user", "content": "hi", (1, 2): 1}]), ingle.BadRequestError, "messages[0]"),
    ("circular", chat(messages=circular()), ingle.BadRequestError, "messages[0]"),
    ("too-deep", chat(messages=nested(1000)), ingle.BadRequestError, None),
    ("input-opaque", embedding(input=[Opaque()]), ingle.BadRequestError, "input[0]"),
    ("input-memoryview", embedding(input=memoryview(b"hi")), ingle.BadRequestError, "input"),
    # Missing required arguments.
    ("chat-no-model", chat_without("model"), ingle.BadRequestError, "model"),
    ("chat-no-messages", chat_without("messages"), ingle.BadRequestError, "messages"),
    ("embedding-no-input", lambda c: c.embeddings.create(model=EMBEDDING), ingle.BadRequestError, "input"),
    ("completion-no-prompt", lambda c: c.completions.create(model=MODEL), ingle.BadRequestError, "prompt"),
    ("retrieve-nothing", lambda c: c.models.retrieve(), ingle.BadRequestError, "model"),
    ("predictions-no-tag", lambda c: c.predictions.create(inputs={"prompt": "Hi"}), ingle.BadRequestError, "tag"),
    ("metrics-nothing", lambda c: c.metrics(), ingle.BadRequestError, "model"),
    # Text the engine takes, for a model that does not exist.
    ("retrieve-nul", lambda c: c.models.retrieve("\x00"), ingle.NotFoundError, "model"),
    ("model-nul", chat(model="a\x00b"), ingle.NotFoundError, "model"),
]


def check(error, cls, param):
    assert type(error) is cls, repr(error)
    assert isinstance(error, ingle.OpenAIError)
    assert error.status_code == {ingle.BadRequestError: 400, ingle.NotFoundError: 404}[cls]
    if param is not None:
        assert error.param == param, error.message
    # The message is printable text (no lone surrogate quoted back), and says what is wrong.
    error.message.encode("utf-8")
    str(error).encode("utf-8")
    json.dumps(error.body, ensure_ascii=False).encode("utf-8")
    assert error.body["message"] == error.message and error.body["param"] == error.param
    if param is not None and cls is ingle.BadRequestError:
        assert param in error.message


def still_works(client):
    r = client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=4, temperature=0)
    assert r.usage.completion_tokens == 4


@pytest.mark.parametrize("call, cls, param", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_sync(client, call, cls, param):
    with pytest.raises(ingle.OpenAIError) as e:
        call(client)  # a stream too: it is refused when created, not at the first chunk
    check(e.value, cls, param)
    still_works(client)


@pytest.fixture(scope="module")
def aclient():
    return ingle.AsyncOpenAI()


@pytest.mark.parametrize("call, cls, param", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_async(aclient, call, cls, param):
    async def main():
        with pytest.raises(ingle.OpenAIError) as e:
            await call(aclient)
        check(e.value, cls, param)
        r = await aclient.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=4, temperature=0)
        assert r.usage.completion_tokens == 4

    asyncio.run(main())


def test_a_nan_is_never_sent_as_json(client):
    # What json.dumps would have sent: the engine must not get it, and must not default it.
    assert json.dumps({"x": NAN}) == '{"x": NaN}'
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=4, seed=NAN)
    assert e.value.param == "seed" and "nan" in e.value.message


@pytest.mark.parametrize(
    "value",
    ["/tmp\x00x", b"/tmp\x00x", "/tmp/\ud800", "", 42, object(), ["/tmp"]],
    ids=["nul", "bytes-nul", "surrogate", "empty", "int", "object", "list"],
)
@pytest.mark.parametrize("name", ["models_dir", "config"])
@pytest.mark.parametrize("cls", [ingle.OpenAI, ingle.AsyncOpenAI])
def test_a_bad_path_fails_at_construction(client, cls, name, value):
    with pytest.raises(ingle.BadRequestError) as e:
        cls(**{name: value})
    assert e.value.status_code == 400 and e.value.param == name
    assert f"`{name}`" in e.value.message
    str(e.value).encode("utf-8")
    still_works(client)


def test_models_dir_that_is_a_file_fails_at_construction(tmp_path):
    # The engine's own check of the config, made when the client is created.
    file = tmp_path / "models"
    file.write_text("")
    with pytest.raises(ingle.BadRequestError) as e:
        ingle.OpenAI(models_dir=file)
    assert e.value.param == "models_dir"


def test_paths_the_file_system_can_hold_are_accepted(tmp_path):
    # bytes, PathLike, and a str with undecodable bytes escaped (as os.listdir gives them).
    for models_dir in (bytes(tmp_path), tmp_path, str(tmp_path / "caf\udce9")):
        c = ingle.OpenAI(models_dir=models_dir)
        assert c.models.retrieve(MODEL).id == MODEL


def test_containers_json_cannot_write_directly_are_converted(client):
    # Tuples, generators, mappings, NumPy arrays and scalars become their JSON.
    r = client.chat.completions.create(
        model=MODEL,
        messages=(m for m in FRANCE),
        max_tokens=np.int64(4),
        temperature=np.float32(0.0),
        stop=("\n\n\n",),
    )
    assert r.usage.completion_tokens == 4
    e = client.embeddings.create(model=EMBEDDING, input=np.array(["first", "second"]))
    assert e.to_numpy().shape == (2, 384)
    assert math.isclose(float(np.linalg.norm(e.to_numpy()[0])), 1, abs_tol=1e-5)


def test_a_nul_in_content(client):
    # JSON holds it as \u0000; the engine either takes it as text or refuses the message
    # (llama.cpp's chat templates read C strings), naming it. Never a crash or a cut message.
    try:
        r = client.chat.completions.create(model=MODEL, messages=user("a\x00b"), max_tokens=4)
        assert r.usage.completion_tokens == 4
    except ingle.BadRequestError as e:
        assert e.param.startswith("messages[0]") and "NUL" in e.message
    still_works(client)


@pytest.mark.parametrize(
    "method", ["chat.completions.create", "completions.create", "chat.completions.stream"]
)
def test_the_native_layer_takes_exactly_one_json_document(client, method):
    # What the Python layer never sends, the engine refuses too: data after the document, a
    # document cut short, json.dumps's NaN. A syntax error names no parameter, and says where.
    native = client._native
    run = native.stream if method.endswith("stream") else native.call
    prompt = {"messages": FRANCE} if method.startswith("chat") else {"prompt": "Hello"}
    good = json.dumps(dict(model=MODEL, **prompt, max_tokens=4))
    assert good.endswith('"max_tokens": 4}')
    for text in (good + " {}", good + "}", good[:-1], good[: -len("4}")] + "NaN}"):
        with pytest.raises(ingle.BadRequestError) as e:
            run(method, text)
        assert e.value.param is None and e.value.code == "invalid_json"
        assert "line 1 column" in e.value.message
    result = run(method, good)
    texts = list(result) if method.endswith("stream") else [result]
    assert json.loads(texts[-1])["object"] in ("chat.completion", "chat.completion.chunk", "text_completion")


def test_the_native_layer_names_an_unknown_method(client):
    with pytest.raises(ingle.BadRequestError) as e:
        client._native.call("chat.complete", "{}")
    assert e.value.param == "method" and e.value.code == "unknown_method"
    assert "chat.completions.create" in e.value.message
    still_works(client)
