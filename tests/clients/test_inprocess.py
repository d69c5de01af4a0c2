"""The frameworks that take a client object, given ingle's in-process one (`ingle.OpenAI()`,
`ingle.AsyncOpenAI()`) instead of an `openai` client pointed at `ingle serve`: no server, the
model runs in the test's process.

scripts/test-clients installs the ingle wheel in both virtualenvs and runs this file in each;
a framework's tests are defined where it is installed (openai 3.x: openai-agents, LangChain;
openai 2.x: instructor, LlamaIndex).

What each framework checks of the client decides what works: duck typing (the methods and the
response objects' attributes) works with ingle's; an `isinstance` test against the `openai`
package's classes (ingle's are its own, it has no dependencies) does not, and the row says what
to do instead."""

import asyncio
import importlib.util

import pytest

import ingle
from common import CAPITAL, CITY_QUESTION, MINILM, QWEN, SENTENCE, WEATHER_QUESTION, is_paris


def installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        return False


@pytest.fixture(scope="module")
def client():
    return ingle.OpenAI()


@pytest.fixture(scope="module")
def aclient():
    return ingle.AsyncOpenAI()


if installed("instructor"):
    import instructor
    import pydantic
    from instructor.v2.core.errors import ClientError

    class City(pydantic.BaseModel):
        city: str
        country: str

    def check_city(city):
        assert isinstance(city, City), city
        assert is_paris(city.city) and "france" in city.country.lower(), city

    def patched(client, mode):
        # instructor.patch wraps any `create` (its duck-typed way in); Instructor gives it the
        # client's interface (create, create_partial, ...), as from_openai would.
        cls = (instructor.AsyncInstructor if isinstance(client, ingle.AsyncOpenAI)
               else instructor.Instructor)
        create = instructor.patch(create=client.chat.completions.create, mode=mode)
        return cls(client=client, create=create, mode=mode)

    ASK = dict(model=QWEN, messages=[{"role": "user", "content": CITY_QUESTION}],
               response_model=City, temperature=0, max_tokens=60, max_retries=1)

    @pytest.mark.client("instructor", "instructor", "`instructor.from_openai(ingle.OpenAI())`", inprocess=True)
    @pytest.mark.xfail(raises=ClientError, strict=True, reason=(
        "instructor: from_openai takes only `openai.OpenAI`/`AsyncOpenAI` (isinstance); wrap "
        "ingle's create: `Instructor(client=c, create=instructor.patch(create="
        "c.chat.completions.create, mode=m), mode=m)` (below), or `ingle serve` and "
        "`from_openai(openai.OpenAI(base_url=URL))`"))
    def test_instructor_from_openai(client):
        instructor.from_openai(client, mode=instructor.Mode.JSON_SCHEMA)

    @pytest.mark.client("instructor", "instructor", "`Instructor(create=instructor.patch(create=ingle.OpenAI().chat.completions.create, mode=Mode.JSON_SCHEMA))`", inprocess=True)
    def test_instructor_json_schema(client):
        check_city(patched(client, instructor.Mode.JSON_SCHEMA).chat.completions.create(**ASK))

    @pytest.mark.client("instructor", "instructor", "the same, `Mode.TOOLS`", inprocess=True)
    def test_instructor_tools(client):
        check_city(patched(client, instructor.Mode.TOOLS).chat.completions.create(**ASK))

    @pytest.mark.client("instructor", "instructor", "the same, `create_partial(...)`, `Mode.TOOLS` (streamed tool arguments)", inprocess=True)
    def test_instructor_partial_tools(client):
        partials = list(patched(client, instructor.Mode.TOOLS).chat.completions.create_partial(**ASK))
        assert len(partials) > 2 and partials[0].country is None, partials
        check_city(partials[-1])

    @pytest.mark.client("instructor", "instructor", "`AsyncInstructor(create=instructor.patch(create=ingle.AsyncOpenAI().chat.completions.create, ...))`, `Mode.JSON_SCHEMA`", inprocess=True)
    def test_instructor_async(aclient):
        create = patched(aclient, instructor.Mode.JSON_SCHEMA).chat.completions.create
        check_city(asyncio.run(create(**ASK)))


if installed("llama_index.llms.openai_like"):
    from llama_index.core.llms import ChatMessage
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai_like import OpenAILike

    from common import get_weather

    def llama(client=None, aclient=None):
        return OpenAILike(model=QWEN, openai_client=client, async_openai_client=aclient,
                          is_chat_model=True, is_function_calling_model=True,
                          context_window=32768, temperature=0, max_tokens=40)

    @pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike(openai_client=ingle.OpenAI()).chat`", inprocess=True)
    def test_llamaindex_chat(client):
        reply = llama(client).chat([ChatMessage(role="user", content=CAPITAL)])
        assert "paris" in reply.message.content.lower(), reply

    @pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike(openai_client=ingle.OpenAI()).stream_chat`", inprocess=True)
    def test_llamaindex_stream_chat(client):
        responses = list(llama(client).stream_chat([ChatMessage(role="user", content=SENTENCE)]))
        assert sum(1 for r in responses if r.delta) > 1, "the answer arrives in pieces"
        assert "paris" in responses[-1].message.content.lower(), responses[-1]

    @pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike(openai_client=ingle.OpenAI()).chat_with_tools(tool_required=True)`", inprocess=True)
    def test_llamaindex_chat_with_tools(client):
        model = llama(client)
        reply = model.chat_with_tools([FunctionTool.from_defaults(fn=get_weather)],
                                      user_msg=WEATHER_QUESTION, tool_required=True)
        (call,) = model.get_tool_calls_from_response(reply, error_on_no_tool_call=True)
        assert call.tool_name == "get_weather" and is_paris(call.tool_kwargs.get("city")), call

    @pytest.mark.client("LlamaIndex", "llama-index-llms-openai-like", "`OpenAILike(async_openai_client=ingle.AsyncOpenAI()).astream_chat_with_tools(tool_required=True)`", inprocess=True)
    def test_llamaindex_astream_chat_with_tools(aclient):
        model = llama(aclient=aclient)

        async def run():
            stream = await model.astream_chat_with_tools(
                [FunctionTool.from_defaults(fn=get_weather)], user_msg=WEATHER_QUESTION,
                tool_required=True)
            return [r async for r in stream]

        responses = asyncio.run(run())
        (call,) = model.get_tool_calls_from_response(responses[-1], error_on_no_tool_call=True)
        assert call.tool_name == "get_weather" and is_paris(call.tool_kwargs.get("city")), call


if installed("agents"):
    from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool,
                        set_tracing_disabled)
    from agents.items import ToolCallItem, ToolCallOutputItem

    set_tracing_disabled(True)
    calls = []
    REPORT = "The weather in {} is sunny, 21 degrees celsius."

    @function_tool
    def weather(city: str) -> str:
        """Get the current weather in a city."""
        calls.append(city)
        return REPORT.format(city)

    def agent(aclient):
        calls.clear()
        return Agent(name="Weather", instructions="You answer questions about the weather.",
                     tools=[weather], tool_use_behavior="stop_on_first_tool",
                     model=OpenAIChatCompletionsModel(model=QWEN, openai_client=aclient),
                     model_settings=ModelSettings(temperature=0, max_tokens=60,
                                                  tool_choice="required"))

    def check_agent(result):
        assert len(calls) == 1 and is_paris(calls[0]), calls
        kinds = [type(item) for item in result.new_items]
        assert kinds == [ToolCallItem, ToolCallOutputItem], kinds
        assert result.final_output == REPORT.format(calls[0])

    @pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_sync(Agent(tools=[@function_tool], model=OpenAIChatCompletionsModel(openai_client=ingle.AsyncOpenAI()), tool_use_behavior=\"stop_on_first_tool\"))`", inprocess=True)
    @pytest.mark.xfail(raises=AttributeError, strict=True, reason=(
        "openai-agents: a reply that is not an `openai.types.chat.ChatCompletion` (isinstance) is "
        "taken for a stream, and ingle's types are its own; run the agent streamed "
        "(`Runner.run_streamed`, below), or use `ingle serve` with `AsyncOpenAI(base_url=URL)`"))
    def test_agents_run(aclient):
        check_agent(Runner.run_sync(agent(aclient), WEATHER_QUESTION, max_turns=2))

    @pytest.mark.client("openai-agents", "openai-agents", "`Runner.run_streamed(...)`, the same agent streamed", inprocess=True)
    def test_agents_run_streamed(aclient):
        async def run():
            result = Runner.run_streamed(agent(aclient), WEATHER_QUESTION, max_turns=2)
            events = [event async for event in result.stream_events()]
            assert any(e.type == "raw_response_event" for e in events)
            return result

        check_agent(asyncio.run(run()))


if installed("langchain_openai"):
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

    def chat(client, aclient, **kwargs):
        return ChatOpenAI(model=QWEN, client=client.chat.completions, root_client=client,
                          async_client=aclient.chat.completions, root_async_client=aclient,
                          temperature=0, max_tokens=40, **kwargs)

    from common import get_weather as weather_function

    lc_weather = tool(weather_function)

    @pytest.mark.client("LangChain", "langchain-openai", "`ChatOpenAI(client=ingle.OpenAI().chat.completions, root_client=..., async_client=..., root_async_client=...).invoke`", inprocess=True)
    @pytest.mark.xfail(raises=AttributeError, strict=True, reason=(
        "langchain-openai: a whole reply is read through `with_raw_response` and must be an "
        "`openai.BaseModel` (isinstance), and ingle's types are its own; pass `streaming=True` "
        "(below), or use `ingle serve` with `ChatOpenAI(base_url=URL)`"))
    def test_langchain_invoke(client, aclient):
        chat(client, aclient).invoke(CAPITAL)

    @pytest.mark.client("LangChain", "langchain-openai", "the same with `streaming=True`: `invoke`", inprocess=True)
    def test_langchain_invoke_streaming(client, aclient):
        reply = chat(client, aclient, streaming=True).invoke(CAPITAL)
        assert isinstance(reply, AIMessage) and "paris" in reply.content.lower(), reply

    @pytest.mark.client("LangChain", "langchain-openai", "the same, `ainvoke` (`ingle.AsyncOpenAI()`)", inprocess=True)
    def test_langchain_ainvoke_streaming(client, aclient):
        reply = asyncio.run(chat(client, aclient, streaming=True).ainvoke(CAPITAL))
        assert isinstance(reply, AIMessage) and "paris" in reply.content.lower(), reply

    @pytest.mark.client("LangChain", "langchain-openai", "the same, `stream`", inprocess=True)
    def test_langchain_stream(client, aclient):
        chunks = list(chat(client, aclient).stream(SENTENCE))
        assert sum(1 for c in chunks if c.content) > 1, "the answer arrives in pieces"
        whole = sum(chunks[1:], chunks[0])
        assert "paris" in whole.content.lower(), whole.content

    @pytest.mark.client("LangChain", "langchain-openai", "the same, `bind_tools(...).invoke` (`streaming=True`)", inprocess=True)
    def test_langchain_bind_tools(client, aclient):
        model = chat(client, aclient, streaming=True).bind_tools([lc_weather], tool_choice="any")
        (call,) = model.invoke(WEATHER_QUESTION).tool_calls
        assert call["name"] == "get_weather" and is_paris(call["args"].get("city")), call

    @pytest.mark.client("LangChain", "langchain-openai", "`OpenAIEmbeddings(client=ingle.OpenAI().embeddings, async_client=..., check_embedding_ctx_length=False).embed_documents`", inprocess=True)
    def test_langchain_embeddings(client, aclient):
        embeddings = OpenAIEmbeddings(model=MINILM, client=client.embeddings,
                                      async_client=aclient.embeddings,
                                      check_embedding_ctx_length=False)
        vectors = embeddings.embed_documents(["first text", "second"])
        assert len(vectors) == 2 and all(len(v) == 384 for v in vectors)
