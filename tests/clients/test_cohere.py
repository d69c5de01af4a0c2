"""The `cohere` SDK's rerank (v2's `ClientV2`, v1's `Client`) with `base_url` at `ingle serve`,
ranking with the embedding model (cosine scores)."""

import cohere
import pytest

from common import KEY, MINILM, URL

ROOT = URL.removesuffix("/v1")
QUERY = "What is the capital of France?"
DOCUMENTS = ["Berlin is the capital of Germany.", "Paris is the capital and largest city of France.",
             "Bananas are rich in potassium."]


@pytest.mark.client("Cohere SDK", "cohere", "`ClientV2(base_url=...).rerank`")
def test_rerank_v2():
    client = cohere.ClientV2(api_key=KEY, base_url=ROOT, timeout=60)
    r = client.rerank(model=MINILM, query=QUERY, documents=DOCUMENTS, top_n=2)
    assert [x.index for x in r.results] == [1, 0], r
    assert r.results[0].relevance_score > r.results[1].relevance_score
    with pytest.raises(cohere.core.api_error.ApiError) as error:
        client.rerank(model=MINILM, query=QUERY, documents=[], top_n=2)
    assert error.value.status_code == 400 and error.value.body["error"]["param"] == "documents"


@pytest.mark.client("Cohere SDK", "cohere", "`Client(base_url=...).rerank(return_documents=True)` (v1)")
def test_rerank_v1():
    client = cohere.Client(api_key=KEY, base_url=ROOT, timeout=60)
    r = client.rerank(model=MINILM, query=QUERY, documents=[{"text": d} for d in DOCUMENTS],
                      return_documents=True)
    assert [x.index for x in r.results] == [1, 0, 2], r
    assert r.results[0].document.text == DOCUMENTS[1]
