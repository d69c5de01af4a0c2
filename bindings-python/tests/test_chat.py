import asyncio
import json

import openai
import openai.types
import openai.types.chat
import pytest

import ingle
from conftest import FRANCE, MODEL


def test_create_answers_and_has_openai_shape(client):
    r = client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=12, temperature=0)
    assert "Paris" in r.choices[0].message.content
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.object == "chat.completion" and r.model == MODEL and r.id.startswith("chatcmpl-")
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0
    dumped = r.model_dump()
    assert dumped["choices"][0]["message"]["content"] == r.choices[0].message.content
    assert json.loads(r.model_dump_json()) == dumped
    # The openai package's own pydantic type accepts it, field for field.
    theirs = openai.types.chat.ChatCompletion.model_validate(dumped)
    assert theirs.choices[0].message.content == r.choices[0].message.content
    assert theirs.usage.total_tokens == r.usage.total_tokens
    assert repr(r).startswith("ChatCompletion(id='chatcmpl-")
    assert "ChatCompletionMessage(content=" in repr(r)


def test_stream_matches_create_and_validates(client):
    params = dict(model=MODEL, messages=FRANCE, max_tokens=12, seed=7, temperature=0.8)
    whole = client.chat.completions.create(**params)
    chunks = list(
        client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == whole.usage.total_tokens
    assert len({c.id for c in chunks}) == 1
    for chunk in chunks:
        assert chunk.object == "chat.completion.chunk"
        openai.types.chat.ChatCompletionChunk.model_validate(chunk.model_dump())


def test_messages_accept_response_objects(client):
    first = client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=8, temperature=0)
    follow_up = FRANCE + [first.choices[0].message, {"role": "user", "content": "And Spain?"}]
    r = client.chat.completions.create(model=MODEL, messages=follow_up, max_tokens=8, temperature=0)
    assert r.usage.prompt_tokens > first.usage.prompt_tokens


def test_openai_client_arguments_are_accepted():
    # Code written for openai passes connection arguments; they mean nothing in-process.
    c = ingle.OpenAI(api_key="sk-unused", base_url="http://unused", timeout=5, max_retries=1)
    r = c.chat.completions.create(
        model=MODEL, messages=FRANCE, max_tokens=2, extra_headers={"X-A": "b"}, timeout=3
    )
    assert r.usage.completion_tokens == 2


def test_a_dropped_client_is_freed_at_once():
    # Models are freed with the last client that uses them: the methods looked up on a client
    # keep nothing that refers back to it, so it goes without waiting for the cycle collector.
    import gc
    import weakref

    gc.disable()
    try:
        for make in (ingle.OpenAI, ingle.AsyncOpenAI, ingle.Anthropic):
            c = make()
            freed = weakref.ref(c)
            resources = [c.messages] if make is ingle.Anthropic else [c.chat.completions, c.models]
            gone = [weakref.ref(r) for r in resources]
            for r in resources:
                r.create if hasattr(r, "create") else r.list  # bound, then dropped
            if make is not ingle.Anthropic:
                c.tokenize, c.metrics
            del c, resources, r
            assert freed() is None and all(g() is None for g in gone), make
    finally:
        gc.enable()


def test_methods_are_named_and_patchable_on_the_class(client):
    # Tracing tools name spans after the method and patch it on the class (wrapt, mock).
    from unittest import mock

    assert client.chat.completions.create.__qualname__ == "ChatCompletions.create"
    assert client.tokenize.__name__ == "tokenize"
    with mock.patch.object(type(client.models), "list", lambda self: "patched"):
        assert client.models.list() == "patched"
    assert client.models.list().data


def test_openai_sentinels_are_left_out(client):
    # Frameworks written for the openai client pass its NOT_GIVEN and omit for what they leave
    # out (openai-agents: `tools=omit`, `stream=omit`, `store=omit`, ...); they are not sent.
    left_out = dict(temperature=openai.NOT_GIVEN, tools=openai.omit, tool_choice=openai.omit,
                    store=openai.omit, metadata=openai.omit, top_p=ingle.NOT_GIVEN,
                    extra_headers={"User-Agent": "Agents/Python"}, extra_query=None,
                    extra_body=None)
    r = client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=2,
                                       stream=openai.omit, **left_out)
    assert r.usage.completion_tokens == 2
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=FRANCE, max_tokens=2, stream=True, stream_options=openai.omit,
        **left_out))
    assert chunks[-1].choices[0].finish_reason == "length"
    r = client.chat.completions.parse(model=MODEL, messages=FRANCE, max_tokens=2,
                                      response_format=openai.NOT_GIVEN, **left_out)
    assert r.choices[0].message.parsed is None and r.usage.completion_tokens == 2
    r = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=2,
                                  suffix=openai.omit, temperature=openai.NOT_GIVEN)
    assert r.usage.completion_tokens == 2


def test_base_url_is_none():
    # Frameworks read `client.base_url` (openai-agents does, to tell OpenAI's own API); there
    # is no server in-process, whatever base_url was passed.
    assert ingle.OpenAI(base_url="http://unused").base_url is None
    assert ingle.AsyncOpenAI().base_url is None


def test_completions(client):
    r = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=16, temperature=0)
    assert r.object == "text_completion" and r.usage.completion_tokens == 16
    openai.types.Completion.model_validate(r.model_dump())
    chunks = list(
        client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=16, temperature=0, stream=True)
    )
    assert "".join(c.choices[0].text for c in chunks if c.choices) == r.choices[0].text
    # openai's Completion type wants a finish_reason, which the API itself (and ingle) leaves
    # null until the last chunk; so the last chunk validates, and the others match it in shape.
    openai.types.Completion.model_validate(chunks[-1].model_dump())
    assert chunks[-1].choices[0].finish_reason == "length"
    for chunk in chunks[:-1]:
        assert chunk.choices[0].finish_reason is None
        assert chunk.model_dump().keys() == chunks[-1].model_dump().keys()


def test_models(client):
    assert MODEL in [m.id for m in client.models.list()]
    assert client.models.list().data[0].object == "model"
    m = client.models.retrieve(MODEL)
    assert m.id == MODEL and m.owned_by == "ingle"
    openai.types.Model.model_validate(m.model_dump())
    with pytest.raises(ingle.NotFoundError):
        client.models.retrieve("@nobody/nothing")


def test_predictions(client):
    inputs = {"prompt": "The capital of France is", "max_tokens": 4, "temperature": 0}
    p = client.predictions.create(tag=MODEL, inputs=inputs)
    assert p.id.startswith("pred_") and p.tag == MODEL and p.error is None
    assert p.latency > 0 and isinstance(p.results, list)
    partial = list(client.predictions.stream(tag=MODEL, inputs=inputs))
    assert len(partial) >= 2 and all(q.id == partial[0].id for q in partial)
    assert partial[-1].latency >= partial[0].latency
    with pytest.raises(ingle.BadRequestError) as e:
        client.predictions.create(tag=MODEL, inputs={"max_tokens": "many"})
    assert e.value.param == "max_tokens"


def test_version_matches_the_crate():
    import pathlib
    import re

    cargo = pathlib.Path(__file__).resolve().parents[2] / "Cargo.toml"
    version = re.search(r'^version = "(.+)"', cargo.read_text(), re.M).group(1)
    assert ingle.__version__ == version


def test_metrics_count_what_a_request_did(client):
    before = client.metrics(MODEL)
    client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=6, temperature=0)
    after = client.metrics(MODEL)
    assert after["prompt_tokens"] - before["prompt_tokens"] >= 10
    assert after["generated_tokens"] > before["generated_tokens"]
    first = after["time_to_first_token"]
    assert first["count"] == before["time_to_first_token"]["count"] + 1
    assert first["buckets"][-1] == [None, first["count"]] and first["sum_seconds"] > 0
    assert after["kv_cells_total"] > 0 and after["kv_cells_used"] == 0
    assert after["memory_bytes"] > 50_000_000


def test_a_gguf_file_is_a_model_by_its_path(client):
    import os
    import pathlib

    models = pathlib.Path(os.environ.get("INGLE_MODELS_DIR", pathlib.Path.home() / ".cache/ingle/models"))
    path = models / "SmolLM2-135M-Instruct.Q4_1.gguf"
    r = client.chat.completions.create(model=str(path), messages=FRANCE, max_tokens=8, temperature=0)
    assert "Paris" in r.choices[0].message.content
    assert str(path) in [m.id for m in client.models.list()]
    with pytest.raises(ingle.NotFoundError) as e:
        client.chat.completions.create(model="/nonexistent/x.gguf", messages=FRANCE)
    assert e.value.param == "model" and "does not exist" in e.value.message


def test_tokenize_and_detokenize_round_trip_sync_and_async(client):
    text = "Name the capital of France."
    tokens = client.tokenize(model=MODEL, content=text).tokens
    assert tokens and all(isinstance(t, int) for t in tokens)
    assert client.detokenize(model=MODEL, tokens=tokens).content == text
    pieces = client.tokenize(model=MODEL, content="<|im_start|>Hi", with_pieces=True).tokens
    assert pieces[0].piece == "<|im_start|>" and isinstance(pieces[0].id, int)
    assert "".join(p.piece for p in pieces) == "<|im_start|>Hi"
    with pytest.raises(ingle.BadRequestError) as caught:
        client.detokenize(model=MODEL, tokens=[1, -1])
    assert caught.value.param == "tokens[1]"
    # As every method: a missing argument is a BadRequestError naming it; `model` defaults to
    # the default chat model, as on llama.cpp's server.
    for call, param in [(lambda: client.tokenize(), "content"), (lambda: client.detokenize(), "tokens")]:
        with pytest.raises(ingle.BadRequestError) as caught:
            call()
        assert caught.value.param == param
    assert client.tokenize(content=text).tokens == tokens

    async def run():
        async_client = ingle.AsyncOpenAI()
        tokens = (await async_client.tokenize(model=MODEL, content=text)).tokens
        return tokens, (await async_client.detokenize(model=MODEL, tokens=tokens)).content

    assert asyncio.run(run()) == (tokens, text)
