"""Every Response object and stream event of `ingle serve`'s Responses API, checked against the
OpenResponses specification's schema (tests/python_shared/openresponses_check.py): a text
answer, one cut short by `max_output_tokens`, and a function call, whole and streamed."""

import json
import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "python_shared"))
import openresponses_check as spec  # noqa: E402

CHAT = "@local/smollm2-135m-instruct"
QWEN = "@local/qwen2.5-coder-0.5b-instruct"
WEATHER = [{"type": "function", "name": "get_weather", "description": "Get the current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
CASES = {
    "text": dict(model=CHAT, input="Name the capital of France.", instructions="Be brief.",
                 temperature=0, max_output_tokens=30),
    "incomplete": dict(model=CHAT, input="Count from one to twenty.", max_output_tokens=3),
    "function_call": dict(model=QWEN, input="What is the weather in Paris?", tools=WEATHER,
                          tool_choice="required", temperature=0, max_output_tokens=60),
}


def http(method: str, path: str, body: dict | None = None) -> list:
    return spec.http(os.environ["INGLE_SERVE_URL"], method, path, body, os.environ["INGLE_SERVE_KEY"])


@pytest.mark.parametrize("case", CASES)
def test_responses_and_their_events_follow_the_specification(case):
    body = CASES[case]
    response = spec.check_response(json.loads("".join(http("POST", "/responses", body))))
    assert response.status == ("incomplete" if case == "incomplete" else "completed")
    if case == "incomplete":
        # Left to the model, the sampling it used: SmolLM2's recommended (its GGUF's
        # `general.sampling.*`, as its model card says), not OpenAI's 1.
        assert (response.temperature, response.top_p) == (0.2, 0.9)
    assert [item.type for item in response.output] == (
        ["function_call"] if case == "function_call" else ["message"])
    # The stored copy, as `GET /responses/{id}` gives it back, too.
    spec.check_response(json.loads("".join(http("GET", f"/responses/{response.id}"))))
    events = spec.sse_events(http("POST", "/responses", {**body, "stream": True}))
    kinds = spec.check_events(events)
    last = "response.incomplete" if case == "incomplete" else "response.completed"
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == last
    if case == "function_call":
        assert "response.function_call_arguments.done" in kinds


def test_apply_template_renders_the_prompt_as_llama_cpp_server_does():
    # llama.cpp server's clients send no model: the default chat model's template.
    body = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]}
    root = os.environ["INGLE_SERVE_URL"].removesuffix("/v1")
    lines = spec.http(root, "POST", "/apply-template", body, os.environ["INGLE_SERVE_KEY"])
    prompt = json.loads("".join(lines))["prompt"]
    assert prompt.endswith("<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n"), prompt
    # At /v1 too, for a named model with tools: the template's own tool block.
    tools = [{"type": "function", "function": {k: v for k, v in WEATHER[0].items() if k != "type"}}]
    rendered = json.loads("".join(http("POST", "/apply-template", {**body, "model": QWEN, "tools": tools})))["prompt"]
    assert "get_weather" in rendered and "<tools>" in rendered, rendered
