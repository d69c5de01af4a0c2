"""Models that think in `<think>` tags (Qwen3, QwQ, DeepSeek R1 and its distills): the thoughts
come apart from the answer, in chat, Responses and Anthropic shapes, streamed and whole, in-process
and over HTTP; `reasoning_effort` maps onto what each template reads. On a real model: the
Qwen2.5-Coder-0.5B GGUF with the family's own template (tests/fixtures/chat-templates) as its
config's `chat_template`. What is tested is the split, not the model's wisdom: the same prompt
through `completions` (greedy) gives the raw text, which must be exactly the reasoning, the
closing tag and the answer. Each generation starts from an empty prompt cache (the model
unloaded first): on this prompt a full-prefix cache hit changes the 0.5B's greedy text."""

import pathlib
from typing import Any, Dict, List, Tuple

import anthropic
import openai
import pytest

import ingle

from conftest import qwen_gguf

TEMPLATES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "chat-templates"
R1 = "@t/r1"  # DeepSeek R1's distills: the generation prompt opens the thoughts
QWEN3 = "@t/qwen3"  # Qwen3: the model opens them; `enable_thinking`
COPY = [{"role": "user", "content": "Write exactly this text and nothing else: "
                                    "I add two and two.</think>The answer is 4."}]


@pytest.fixture(scope="module")
def thinkers() -> ingle.OpenAI:
    gguf = qwen_gguf()
    template = lambda name: (TEMPLATES / f"{name}.jinja").read_text()  # noqa: E731
    return ingle.OpenAI(config={"predictors": [
        {"tag": R1, "backend": "llama", "model": gguf, "n_ctx": 1024,
         "chat_template": template("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")},
        {"tag": QWEN3, "backend": "llama", "model": gguf, "n_ctx": 1024,
         "chat_template": template("Qwen-Qwen3-0.6B")},
    ]})


def fresh(client: ingle.OpenAI, model: str) -> ingle.OpenAI:
    client.models.unload(model)
    return client


def raw_split(client: ingle.OpenAI, model: str, messages: List[Dict[str, Any]], max_tokens: int) -> Tuple[str, str]:
    """What the model writes for `messages`, greedy, split by hand at its closing tag."""
    prompt = client.chat.completions.render(model=model, messages=messages)
    raw = fresh(client, model).completions.create(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0).choices[0].text
    inside = prompt.rstrip().endswith("<think>")
    if not inside:
        assert raw.lstrip().startswith("<think>"), raw
        raw = raw.lstrip()[len("<think>"):]
    thoughts, closed, answer = raw.partition("</think>")
    return thoughts.strip(), answer.lstrip() if closed else ""


@pytest.mark.parametrize("model", [R1])
def test_thoughts_come_apart_from_the_answer_streamed_and_whole(thinkers: ingle.OpenAI, model: str) -> None:
    reasoning, answer = raw_split(thinkers, model, COPY, 40)
    assert reasoning and answer, (reasoning, answer)  # the model wrote both: the split is tested
    whole = fresh(thinkers, model).chat.completions.create(model=model, messages=COPY, max_tokens=40, temperature=0)
    message = whole.choices[0].message
    assert (message.reasoning_content, message.content) == (reasoning, answer)
    chunks = [c for c in fresh(thinkers, model).chat.completions.create(model=model, messages=COPY, max_tokens=40,
                                                          temperature=0, stream=True) if c.choices]
    assert "".join(c.choices[0].delta.reasoning_content or "" for c in chunks) == reasoning
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == answer
    with ingle.start_server(thinkers, port=0) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="-", max_retries=0)
        fresh(thinkers, model)
        r = sdk.chat.completions.create(model=model, messages=COPY, max_tokens=40, temperature=0)
        assert (r.choices[0].message.model_extra["reasoning_content"], r.choices[0].message.content) == (reasoning, answer)
        fresh(thinkers, model)
        response = sdk.responses.create(model=model, input=COPY, max_output_tokens=40, temperature=0)
        assert [item.type for item in response.output] == ["reasoning", "message"]
        assert response.output[0].content[0].text == reasoning and response.output_text == answer
        a = anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key="-", max_retries=0)
        fresh(thinkers, model)
        m = a.messages.create(model=model, max_tokens=40, messages=COPY, extra_body={"temperature": 0})
        assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in m.content] == [
            ("thinking", reasoning), ("text", answer)]


def test_thoughts_cut_off_by_max_tokens_never_reach_the_answer(thinkers: ingle.OpenAI) -> None:
    reasoning, answer = raw_split(thinkers, R1, COPY, 3)
    assert reasoning and not answer
    message = fresh(thinkers, R1).chat.completions.create(model=R1, messages=COPY, max_tokens=3, temperature=0).choices[0].message
    assert (message.reasoning_content, message.content or "") == (reasoning, "")


def test_reasoning_effort_maps_onto_each_template(thinkers: ingle.OpenAI, client: ingle.OpenAI) -> None:
    hi = [{"role": "user", "content": "Hi"}]
    # Qwen3: `enable_thinking`, off for none and minimal (its template then closes the thoughts).
    off = thinkers.chat.completions.render(model=QWEN3, messages=hi, reasoning_effort="minimal")
    assert off.endswith("<think>\n\n</think>\n\n"), off
    on = thinkers.chat.completions.render(model=QWEN3, messages=hi, reasoning_effort="high")
    assert on.endswith("<|im_start|>assistant\n"), on
    # A kwarg the caller set wins.
    kept = thinkers.chat.completions.render(model=QWEN3, messages=hi, reasoning_effort="high",
                                            chat_template_kwargs={"enable_thinking": False})
    assert kept == off
    # DeepSeek R1 always thinks: any effort but none.
    thinkers.chat.completions.render(model=R1, messages=hi, reasoning_effort="low")
    with pytest.raises(ingle.BadRequestError) as e:
        thinkers.chat.completions.create(model=R1, messages=hi, reasoning_effort="none")
    assert e.value.param == "reasoning_effort" and "always thinks" in e.value.message
    # A model that does not think takes none, naming the field.
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(model="@local/smollm2-135m-instruct", messages=hi, reasoning_effort="low")
    assert e.value.param == "reasoning_effort"
