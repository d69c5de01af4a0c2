"""client.embeddings.create on the real embedding model (all-MiniLM-L6-v2 on ONNX Runtime)."""

import asyncio
import base64
import math

import numpy as np
import openai.types
import pytest

import ingle
from conftest import MODEL

EMBEDDING = "@local/all-minilm-l6-v2"
PAIR = ["The capital of France is Paris.", "Paris is France's capital city.", "I like turtles."]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def test_reference_cosines_and_openai_shape(client):
    r = client.embeddings.create(model=EMBEDDING, input=PAIR, user="me")
    v = [d.embedding for d in r.data]
    assert abs(dot(v[0], v[1]) - 0.966) < 0.01
    assert abs(dot(v[0], v[2]) - 0.010) < 0.03
    assert [d.index for d in r.data] == [0, 1, 2] and r.data[0].object == "embedding"
    assert len(v[0]) == 384 and all(isinstance(x, float) for x in v[0])
    assert r.object == "list" and r.model == EMBEDDING
    assert r.usage.prompt_tokens == r.usage.total_tokens > 0
    # The dump is the OpenAI JSON: openai's own type accepts it, and nothing private leaks.
    dumped = r.model_dump()
    assert set(dumped) == {"data", "model", "object", "usage"}
    typed = openai.types.CreateEmbeddingResponse.model_validate(dumped)
    assert typed.data[1].embedding == v[1]


def test_to_numpy_views_the_output_without_lists(client):
    r = client.embeddings.create(model=EMBEDDING, input=PAIR)
    matrix = r.to_numpy()
    assert matrix.shape == (3, 384) and matrix.dtype == np.float32
    assert not matrix.flags.owndata and not matrix.flags.writeable  # a view of the engine's bytes
    owner = matrix
    while isinstance(owner, np.ndarray):
        owner = owner.base
    assert isinstance(owner, bytes) and len(owner) == 3 * 384 * 4
    assert np.array_equal(matrix, np.array([d.embedding for d in r.data], dtype=np.float32))
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1, atol=1e-5)


def test_a_batch_equals_one_by_one(client):
    texts = [" ".join(["word"] * n) + f" number {n}" for n in range(1, 70, 3)]
    batch = client.embeddings.create(model=EMBEDDING, input=texts).to_numpy()
    alone = np.stack([client.embeddings.create(model=EMBEDDING, input=t).to_numpy()[0] for t in texts])
    assert np.abs(batch - alone).max() < 1e-5


def test_dimensions_and_base64(client):
    r = client.embeddings.create(model=EMBEDDING, input="Hello", dimensions=128)
    assert len(r.data[0].embedding) == 128
    assert abs(math.sqrt(dot(r.data[0].embedding, r.data[0].embedding)) - 1) < 1e-5
    floats = client.embeddings.create(model=EMBEDDING, input=PAIR).to_numpy()
    encoded = client.embeddings.create(model=EMBEDDING, input=PAIR, encoding_format="base64")
    for i, d in enumerate(encoded.data):
        assert isinstance(d.embedding, str)
        assert np.array_equal(np.frombuffer(base64.b64decode(d.embedding), dtype="<f4"), floats[i])
    # (openai's own Embedding type declares only List[float]: its SDK decodes base64 itself.)


@pytest.mark.parametrize(
    "params, param, words",
    [
        (dict(input=[]), "input", "at least one"),
        (dict(input=""), "input", "empty string"),
        (dict(input=["a", ""]), "input[1]", "empty string"),
        (dict(input=["x"] * 2049), "input", "2048"),
        (dict(input=42), "input", "a string or an array of strings"),
        (dict(input=["a", 1]), "input[1]", "expected a string"),
        (dict(input=[1, 2, 3]), "input", "Token-id input"),
        (dict(input=[[1, 2]]), "input", "Token-id input"),
        (dict(input="a", dimensions=0), "dimensions", "between 1 and 384"),
        (dict(input="a", dimensions=385), "dimensions", "between 1 and 384"),
        (dict(input="a", encoding_format="int8"), "encoding_format", "base64"),
        (dict(input="a", frobnicate=1), "frobnicate", "Unrecognized"),
        # Both wrong: the format is named first, as over HTTP and by `ingle_call`.
        (dict(input="a", encoding_format="int8", frobnicate=1), "encoding_format", "base64"),
        (dict(model=MODEL, input="a"), "model", "no input annotated Embedding"),
    ],
)
def test_bad_requests_name_the_parameter(client, params, param, words):
    request = dict(model=EMBEDDING)
    request.update(params)
    with pytest.raises(ingle.BadRequestError) as e:
        client.embeddings.create(**request)
    assert e.value.status_code == 400 and e.value.param == param
    assert words in e.value.message


def test_unknown_model_and_chat_on_an_embedding_model(client):
    with pytest.raises(ingle.NotFoundError):
        client.embeddings.create(model="@nobody/nothing", input="a")
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(model=EMBEDDING, messages=[{"role": "user", "content": "Hi"}])
    assert "no input annotated ChatMessages" in e.value.message
    assert len(client.embeddings.create(model=EMBEDDING, input="still works").data) == 1


def test_async_embeddings():
    async def main():
        client = ingle.AsyncOpenAI()
        results = await asyncio.gather(
            *(client.embeddings.create(model=EMBEDDING, input=text) for text in PAIR)
        )
        return [r.data[0].embedding for r in results]

    v = asyncio.run(main())
    assert abs(dot(v[0], v[1]) - 0.966) < 0.01


def test_predictions_give_the_tensor_as_base64(client):
    p = client.predictions.create(tag=EMBEDDING, inputs={"texts": ["a", "b"]})
    tensor, usage = p.results
    assert tensor["dtype"] == "float32" and tensor["shape"] == [2, 384]
    matrix = np.frombuffer(base64.b64decode(tensor["data"]), dtype="<f4").reshape(2, 384)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1, atol=1e-5)
    assert usage["prompt_tokens"] == 6
