"""LangChain (Python) through `langchain-openai`: `ChatOpenAI` and `OpenAIEmbeddings` with
`base_url` set to `ingle serve`."""

import math

import openai

import pydantic
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

from common import (CAPITAL, CITY_QUESTION, EXTENSIONS, KEY, MINILM, QWEN, SENTENCE, TIMEOUT, URL,
                    WEATHER_QUESTION, is_paris)


def chat(**kwargs):
    options = dict(model=QWEN, base_url=URL, api_key=KEY, temperature=0, max_tokens=40,
                   max_retries=0, timeout=TIMEOUT)
    return ChatOpenAI(**(options | kwargs))


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"The weather in {city} is sunny."


class City(pydantic.BaseModel):
    """A city and the country it is in."""
    city: str = pydantic.Field(description="the city's name")
    country: str = pydantic.Field(description="the country it is in")


@pytest.mark.client("LangChain", "langchain-openai", "`ChatOpenAI.invoke`")
def test_invoke():
    reply = chat().invoke(CAPITAL)
    assert isinstance(reply, AIMessage)
    assert "paris" in reply.content.lower(), reply.content
    assert reply.response_metadata["finish_reason"] == "stop"
    assert reply.usage_metadata["output_tokens"] > 0


@pytest.mark.client("LangChain", "langchain-openai", "`ChatOpenAI.stream`")
def test_stream():
    chunks = list(chat().stream(SENTENCE))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert sum(1 for c in chunks if c.content) > 1, "the answer arrives in pieces"
    whole = sum(chunks[1:], chunks[0])
    assert "paris" in whole.content.lower(), whole.content


@pytest.mark.client("LangChain", "langchain-openai", "`ChatOpenAI.batch`")
def test_batch():
    replies = chat().batch([CAPITAL, "What is the capital of Italy? Answer in one word."])
    assert "paris" in replies[0].content.lower(), replies[0].content
    assert "rome" in replies[1].content.lower(), replies[1].content


@pytest.mark.client("LangChain", "langchain-openai", "`ChatOpenAI(extra_body={top_k, min_p, repetition_penalty, chat_template_kwargs})`")
def test_extensions():
    reply = chat(extra_body=EXTENSIONS).invoke(CAPITAL)
    assert "paris" in reply.content.lower(), reply.content
    with pytest.raises(openai.BadRequestError, match="top_k"):
        chat(extra_body={"top_k": -1}).invoke(CAPITAL)


@pytest.mark.client("LangChain", "langchain-openai", "`ChatOpenAI.bind_tools(...).invoke`")
def test_bind_tools():
    reply = chat().bind_tools([get_weather], tool_choice="any").invoke(WEATHER_QUESTION)
    (call,) = reply.tool_calls
    assert call["name"] == "get_weather"
    assert isinstance(call["args"], dict) and is_paris(call["args"].get("city")), call
    assert call["id"]
    assert not reply.invalid_tool_calls


@pytest.mark.client("LangChain", "langchain-openai", "`ChatOpenAI.bind_tools(...).stream`")
def test_bind_tools_streamed():
    chunks = list(chat().bind_tools([get_weather], tool_choice="any").stream(WEATHER_QUESTION))
    whole = sum(chunks[1:], chunks[0])
    (call,) = whole.tool_calls
    assert call["name"] == "get_weather"
    assert is_paris(call["args"].get("city")), call
    assert not whole.invalid_tool_calls


@pytest.mark.client("LangChain", "langchain-openai", "`with_structured_output(method=\"json_schema\")`")
def test_structured_output_json_schema():
    city = chat(max_tokens=60).with_structured_output(City, method="json_schema").invoke(
        CITY_QUESTION)
    assert isinstance(city, City)
    assert is_paris(city.city) and "france" in city.country.lower(), city


@pytest.mark.client("LangChain", "langchain-openai", "`with_structured_output(method=\"function_calling\")`")
def test_structured_output_function_calling():
    city = chat(max_tokens=60).with_structured_output(City, method="function_calling").invoke(
        CITY_QUESTION)
    assert isinstance(city, City)
    assert is_paris(city.city) and "france" in city.country.lower(), city


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.mark.client("LangChain", "langchain-openai", "`OpenAIEmbeddings(check_embedding_ctx_length=False)`: `embed_documents`, `embed_query`")
def test_embeddings():
    embeddings = OpenAIEmbeddings(model=MINILM, base_url=URL, api_key=KEY,
                                  check_embedding_ctx_length=False, max_retries=0, timeout=TIMEOUT)
    docs = embeddings.embed_documents(["A cat sat on the mat.", "Stock prices fell sharply today."])
    query = embeddings.embed_query("Where did the kitten sit?")
    assert len(docs) == 2 and all(len(v) == 384 for v in docs + [query])
    assert cosine(query, docs[0]) > cosine(query, docs[1]) + 0.1


RERANK_QUERY = "What is the capital of France?"
RERANK_DOCUMENTS = ["Berlin is the capital of Germany.",
                    "Paris is the capital and largest city of France.",
                    "Bananas are rich in potassium."]


@pytest.mark.client("LangChain", "langchain-cohere", "`CohereRerank(base_url=...).compress_documents`")
def test_cohere_rerank():
    from langchain_cohere import CohereRerank
    from langchain_core.documents import Document

    reranker = CohereRerank(model=MINILM, base_url=URL.removesuffix("/v1"), cohere_api_key=KEY,
                            top_n=2)
    ranked = reranker.compress_documents([Document(page_content=d) for d in RERANK_DOCUMENTS],
                                         RERANK_QUERY)
    assert [d.page_content for d in ranked] == [RERANK_DOCUMENTS[1], RERANK_DOCUMENTS[0]]
    assert ranked[0].metadata["relevance_score"] > ranked[1].metadata["relevance_score"]


@pytest.mark.client("LangChain", "langchain-community", "`JinaRerank` (its `JINA_API_URL` set to ingle's `/v1/rerank`)")
def test_jina_rerank(monkeypatch):
    from langchain_community.document_compressors import jina_rerank
    from langchain_core.documents import Document

    # JinaRerank has no base URL argument: the module's URL constant is read at each call.
    monkeypatch.setattr(jina_rerank, "JINA_API_URL", f"{URL}/rerank")
    reranker = jina_rerank.JinaRerank(model=MINILM, jina_api_key=KEY, top_n=1)
    ranked = reranker.compress_documents([Document(page_content=d) for d in RERANK_DOCUMENTS],
                                         RERANK_QUERY)
    assert [d.page_content for d in ranked] == [RERANK_DOCUMENTS[1]]

