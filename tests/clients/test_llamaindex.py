"""LlamaIndex through `llama-index-llms-openai-like`: `OpenAILike` with `api_base` set to
`ingle serve`, and a `FunctionAgent` on it."""

import asyncio

import openai

import pytest
from llama_index.core.agent.workflow import AgentOutput, FunctionAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai_like import OpenAILike

from common import (CAPITAL, EXTENSIONS, KEY, MINILM, QWEN, SENTENCE, TIMEOUT, URL,
                    WEATHER_QUESTION, get_weather, is_paris)


def llm(**kwargs):
    options = dict(model=QWEN, api_base=URL, api_key=KEY, is_chat_model=True,
                   is_function_calling_model=True, context_window=32768, temperature=0,
                   max_tokens=40, max_retries=0, timeout=TIMEOUT)
    return OpenAILike(**(options | kwargs))


WEATHER = FunctionTool.from_defaults(fn=get_weather)
QUESTION = [ChatMessage(role="user", content=CAPITAL)]


@pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike.chat`")
def test_chat():
    reply = llm().chat(QUESTION)
    assert "paris" in reply.message.content.lower(), reply


@pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike.stream_chat`")
def test_stream_chat():
    responses = list(llm().stream_chat([ChatMessage(role="user", content=SENTENCE)]))
    assert sum(1 for r in responses if r.delta) > 1, "the answer arrives in pieces"
    assert "".join(r.delta or "" for r in responses) == responses[-1].message.content
    assert "paris" in responses[-1].message.content.lower(), responses[-1]


@pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike(additional_kwargs={\"extra_body\": {top_k, min_p, repetition_penalty, chat_template_kwargs}})`")
def test_extensions():
    reply = llm(additional_kwargs={"extra_body": EXTENSIONS}).chat(QUESTION)
    assert "paris" in reply.message.content.lower(), reply
    with pytest.raises(openai.BadRequestError, match="top_k"):
        llm(additional_kwargs={"extra_body": {"top_k": -1}}).chat(QUESTION)


@pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike.chat_with_tools(tool_required=True)` and `get_tool_calls_from_response`")
def test_chat_with_tools():
    model = llm()
    reply = model.chat_with_tools([WEATHER], user_msg=WEATHER_QUESTION, tool_required=True)
    (call,) = model.get_tool_calls_from_response(reply, error_on_no_tool_call=True)
    assert call.tool_name == "get_weather"
    assert is_paris(call.tool_kwargs.get("city")), call


@pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike.stream_chat_with_tools(tool_required=True)`: the tool kwargs")
def test_stream_chat_with_tools():
    model = llm()
    responses = list(model.stream_chat_with_tools([WEATHER], user_msg=WEATHER_QUESTION,
                                                   tool_required=True))
    (call,) = model.get_tool_calls_from_response(responses[-1], error_on_no_tool_call=True)
    assert call.tool_name == "get_weather"
    assert is_paris(call.tool_kwargs.get("city")), call


calls = []


def find_home(person: str) -> str:
    """Find the city where a person lives."""
    calls.append(("find_home", person))
    return f"{person} lives in Lisbon."


def get_city_weather(city: str) -> str:
    """Get the current weather in a city."""
    calls.append(("get_city_weather", city))
    return f"The weather in {city} is sunny, 21 degrees celsius."


TASK = "Alice wants to know the weather where she lives. First find her home city, then get its weather."


def run_agent(tools, **run_options):
    calls.clear()
    agent = FunctionAgent(tools=tools, llm=llm(max_tokens=60),
                          system_prompt="You answer with the tools. Call one tool at a time.")

    async def run():
        handler = agent.run(user_msg=TASK, **run_options)
        rounds = [[(c.tool_name, c.tool_kwargs) for c in e.tool_calls]
                  async for e in handler.stream_events() if isinstance(e, AgentOutput)]
        return rounds, await handler

    return asyncio.run(run())


@pytest.mark.client("LlamaIndex", "llama-index-core", "`FunctionAgent` over two tool rounds (the second call needs the first's result; that tool `return_direct=True`)")
def test_function_agent_two_rounds():
    rounds, response = run_agent(
        [FunctionTool.from_defaults(fn=find_home),
         FunctionTool.from_defaults(fn=get_city_weather, return_direct=True)])
    assert len(rounds) == 2, rounds
    assert rounds[0] == [("find_home", {"person": "Alice"})], rounds
    weather = [kwargs for name, kwargs in rounds[1] if name == "get_city_weather"]
    assert weather and "lisbo" in weather[0].get("city", "").lower(), rounds
    assert str(response) == get_city_weather(weather[0]["city"])


class NoAnswer(Exception):
    """The agent ended on a reply that does not use the tools' results."""


@pytest.mark.client("LlamaIndex", "llama-index-core", "`FunctionAgent` answering from its tools' results (no `return_direct`)")
def test_function_agent_answers():
    try:
        rounds, response = run_agent([find_home, get_city_weather], max_iterations=4)
    finally:
        assert calls and calls[0] == ("find_home", "Alice"), calls
    answer = str(response).lower()
    if ("sunny" not in answer and "21" not in answer) or '"name"' in answer:
        raise NoAnswer(str(response))
    assert [name for name, _ in calls] == ["find_home", "get_city_weather"], calls


RERANK_QUERY = "What is the capital of France?"
RERANK_DOCUMENTS = ["Berlin is the capital of Germany.",
                    "Paris is the capital and largest city of France.",
                    "Bananas are rich in potassium."]


def rerank_nodes():
    from llama_index.core.schema import NodeWithScore, TextNode

    return [NodeWithScore(node=TextNode(text=d)) for d in RERANK_DOCUMENTS]


@pytest.mark.client("LlamaIndex", "llama-index-postprocessor-tei-rerank", "`TextEmbeddingInference(base_url=...)` (TEI's `/rerank`, no model: the default embedding model)")
def test_tei_rerank():
    from llama_index.postprocessor.tei_rerank import TextEmbeddingInference

    reranker = TextEmbeddingInference(base_url=URL.removesuffix("/v1"), top_n=2,
                                      auth_token=f"Bearer {KEY}")
    ranked = reranker.postprocess_nodes(rerank_nodes(), query_str=RERANK_QUERY)
    assert [n.node.get_content() for n in ranked] == [RERANK_DOCUMENTS[1], RERANK_DOCUMENTS[0]]


@pytest.mark.client("LlamaIndex", "llama-index-postprocessor-cohere-rerank", "`CohereRerank(base_url=...)`")
def test_cohere_rerank():
    from llama_index.postprocessor.cohere_rerank import CohereRerank

    reranker = CohereRerank(model=MINILM, api_key=KEY, base_url=URL.removesuffix("/v1"), top_n=1,
                            max_retries=0)
    ranked = reranker.postprocess_nodes(rerank_nodes(), query_str=RERANK_QUERY)
    assert [n.node.get_content() for n in ranked] == [RERANK_DOCUMENTS[1]]

