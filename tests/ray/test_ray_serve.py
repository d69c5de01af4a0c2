"""examples/python/ray_serve.py on a local Ray: two replicas answer the openai SDK, the user
predictor included, and a bad request gets an OpenAI error through Ray's proxy."""

import importlib.util
import pathlib

import openai
import pytest
import ray
from ray import serve

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "ray_serve.py"
MODEL = "@local/smollm2-135m-instruct"


@pytest.fixture(scope="module")
def client():
    spec = importlib.util.spec_from_file_location("ray_serve_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": 8765})
    serve.run(example.app, route_prefix="/v1")
    yield openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="none", max_retries=0)
    serve.shutdown()
    ray.shutdown()


def test_two_replicas_serve_the_default_model_and_a_user_predictor(client):
    replicas = set()
    for _ in range(12):
        raw = client.chat.completions.with_raw_response.create(
            model=MODEL, max_tokens=8, temperature=0,
            messages=[{"role": "user", "content": "Name the capital of France."}])
        replicas.add(raw.headers["x-replica-pid"])
        assert "Paris" in raw.parse().choices[0].message.content
    assert len(replicas) == 2, replicas
    shout = client.chat.completions.create(model="@me/shout",
                                           messages=[{"role": "user", "content": "Name the capital of France."}])
    text = shout.choices[0].message.content
    assert any(c.isalpha() for c in text) and text == text.upper(), text


def test_errors_come_through_as_openai_errors(client):
    with pytest.raises(openai.NotFoundError) as error:
        client.chat.completions.create(model="@nobody/nothing", messages=[{"role": "user", "content": "Hi"}])
    assert error.value.body["param"] == "model"
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}], temperature=9)
    assert error.value.body["param"] == "temperature"
