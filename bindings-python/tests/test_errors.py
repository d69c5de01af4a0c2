import pytest

import ingle
from conftest import FRANCE, MODEL


def test_unknown_model_is_not_found(client):
    with pytest.raises(ingle.NotFoundError) as e:
        client.chat.completions.create(model="@nobody/nothing", messages=FRANCE)
    assert isinstance(e.value, ingle.APIStatusError) and isinstance(e.value, ingle.OpenAIError)
    assert e.value.status_code == 404 and e.value.code == "model_not_found"
    assert "@nobody/nothing" in e.value.message and "@nobody/nothing" in str(e.value)


@pytest.mark.parametrize(
    "params, param, words",
    [
        (dict(temperature=5), "temperature", "temperature"),
        (dict(max_tokens=0), "max_tokens", "max_tokens"),
        (dict(max_tokens="ten"), "max_tokens", "max_tokens"),
        (dict(n=9), "n", "n"),
        (dict(frobnicate=1), None, "frobnicate"),
        (dict(tools=[{"type": "function"}]), "tools[0].function", "tools[0].function"),
        (dict(tools=[{"type": "function", "function": {"name": "f"}}]), "tools", "tools"),
        (dict(messages=[{"role": "robot", "content": "hi"}]), "messages[0].role", "robot"),
        (dict(messages=[]), "messages", "messages"),
    ],
)
def test_bad_requests_name_the_parameter(client, params, param, words):
    request = dict(model=MODEL, messages=FRANCE, max_tokens=4)
    request.update(params)
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(**request)
    assert e.value.status_code == 400 and e.value.type == "invalid_request_error"
    if param is not None:
        assert e.value.param == param
    assert words in e.value.message
    assert e.value.body["message"] == e.value.message


def test_context_length(client):
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=10**6)
    assert e.value.code == "context_length_exceeded"
    # Loaded now, the model reports the context it holds, and a prompt plus answer past it is
    # the same error.
    context = client.models.retrieve(MODEL).context_length
    assert isinstance(context, int) and context >= 512
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=context)
    assert e.value.code == "context_length_exceeded"


def test_missing_model_file_then_usable(tmp_path):
    config = tmp_path / "ingle.toml"
    config.write_text('[[predictors]]\ntag = "@me/gone"\nbackend = "llama"\nmodel = "gone.gguf"\n')
    c = ingle.OpenAI(config=config)
    with pytest.raises(ingle.NotFoundError) as e:
        c.chat.completions.create(model="@me/gone", messages=FRANCE)
    assert "gone.gguf" in e.value.message
    ids = [m.id for m in c.models.list()]
    # The config's model first, then the built-in ones it adds to, and each without its namespace.
    assert ids[0] == "@me/gone" and MODEL in ids and "gone" in ids and "smollm2-135m-instruct" in ids


def test_bad_config():
    with pytest.raises(ingle.BadRequestError) as e:
        ingle.OpenAI(config="/nonexistent/ingle.toml")
    assert "/nonexistent/ingle.toml" in e.value.message


def test_client_usable_after_errors(client):
    for _ in range(3):
        with pytest.raises(ingle.BadRequestError):
            client.chat.completions.create(model=MODEL, messages=FRANCE, temperature=-1)
    r = client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=3)
    assert r.usage.completion_tokens == 3


def test_unserializable_argument_is_a_bad_request(client):
    # Every error a caller can cause is an ingle.OpenAIError, naming the argument.
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=FRANCE, seed=object())
    assert e.value.param == "seed" and "object" in e.value.message


def test_models_dir_argument(tmp_path):
    # An empty models directory: the model's file is looked up there, and the error says how to
    # get it. The client stays usable for other calls.
    c = ingle.OpenAI(models_dir=tmp_path)
    with pytest.raises(ingle.NotFoundError) as e:
        c.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=2)
    assert str(tmp_path) in e.value.message
    assert f"ingle pull {MODEL}" in e.value.message and f'client.models.pull("{MODEL}")' in e.value.message
    assert e.value.code == "model_file_missing"
    assert c.models.retrieve(MODEL).id == MODEL
