"""client.rerank.create: an embedding model as a bi-encoder, a Python predictor annotated for
reranking, both sync and async, and bad requests."""

import asyncio
from typing import Annotated

import pytest

import ingle
from ingle import Parameter, PredictorDefinitionError, predictor

EMBEDDING = "@local/all-minilm-l6-v2"
QUERY = "What is the capital of France?"
DOCUMENTS = [
    "Berlin is the capital of Germany.",
    "The Eiffel Tower is a landmark in Paris.",
    "Paris is the capital and largest city of France.",
    "Bananas are rich in potassium.",
]


def test_an_embedding_model_ranks_paris_first(client):
    r = client.rerank.create(model=EMBEDDING, query=QUERY, documents=DOCUMENTS)
    assert [x.index for x in r.results][0] == 2 and r.results[-1].index == 3
    assert r.results[0].document.text == DOCUMENTS[2]
    scores = [x.relevance_score for x in r.results]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    assert r.id.startswith("rerank-") and r.model == EMBEDDING and r.usage.prompt_tokens > 0
    assert set(r.model_dump()) == {"id", "model", "results", "usage"}
    top = client.rerank.create(
        model=EMBEDDING, query=QUERY, documents=[{"text": d} for d in DOCUMENTS], top_n=1,
        return_documents=False)
    assert [(x.index, x.document) for x in top.results] == [(2, None)]


def test_tei_shape_is_a_list_of_dicts(client):
    r = client.rerank.create(query=QUERY, texts=DOCUMENTS, return_text=True)
    assert [x["index"] for x in r][0] == 2 and r[0]["text"] == DOCUMENTS[2]
    assert set(r[0]) == {"index", "score", "text"}


def test_async_rerank():
    async def main():
        aclient = ingle.AsyncOpenAI()
        r = await aclient.rerank.create(model=EMBEDDING, query=QUERY, documents=DOCUMENTS, top_n=2)
        return [x.index for x in r.results]

    assert asyncio.run(main())[0] == 2


@predictor(tag="@test/overlap")
def overlap(
    query: Annotated[str, Parameter.RerankQuery("The query.")],
    documents: Annotated[list[str], Parameter.RerankDocuments("The documents.")],
) -> Annotated[list[float], Parameter.RerankScores("Words shared with the query.")]:
    """Scores each document by the words it shares with the query."""
    words = set(query.lower().split())
    return [float(len(words & set(d.lower().split()))) for d in documents]


def test_a_python_predictor_annotated_for_rerank_serves_it():
    client = ingle.OpenAI(predictors=[overlap])
    r = client.rerank.create(
        model="@test/overlap", query="red apple pie",
        documents=["a red car", "red apple pie recipe", "pie"])
    assert [(x.index, x.relevance_score) for x in r.results] == [(1, 3.0), (0, 1.0), (2, 1.0)]
    # The same predictor through predictions, as any predictor.
    p = client.predictions.create(tag="@test/overlap", inputs={"query": "a b", "documents": ["a"]})
    assert p.results == [[1.0]]


def test_a_half_declared_reranker_is_refused_naming_what_is_missing():
    with pytest.raises(PredictorDefinitionError, match="RerankDocuments"):
        @predictor(tag="@test/half")
        def half(
            query: Annotated[str, Parameter.RerankQuery("The query.")],
        ) -> Annotated[list[float], Parameter.RerankScores("Scores.")]:
            return []


@pytest.mark.parametrize("params, param", [
    ({"documents": ["a"]}, "query"),
    ({"query": "q"}, "documents"),
    ({"query": "q", "documents": []}, "documents"),
    ({"query": "q", "documents": ["a", 3]}, "documents[1]"),
    ({"query": "q", "documents": ["a"], "top_n": 0}, "top_n"),
    ({"query": "q", "documents": ["a"], "rank_fields": ["x"]}, "rank_fields"),
])
def test_bad_rerank_requests_name_the_parameter(client, params, param):
    with pytest.raises(ingle.BadRequestError) as error:
        client.rerank.create(model=EMBEDDING, **params)
    assert error.value.param == param
    # The client goes on.
    assert client.rerank.create(model=EMBEDDING, query="q", documents=["a"]).results
