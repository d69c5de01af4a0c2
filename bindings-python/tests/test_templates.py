"""Chat templates render as `transformers.apply_chat_template` renders them: each model family's
own template (tests/fixtures/chat-templates/, with their source), over a fixed set of
conversations, through ingle (`client.chat.completions.render`: the Qwen2.5-Coder-0.5B GGUF with
the family's template as its config's `chat_template`) and through Python's jinja2 in the
environment transformers uses; the same bytes, or both refusing."""

import datetime
import json
import pathlib
from typing import Any, Dict, List, Optional

import jinja2
import jinja2.ext
import jinja2.sandbox
import pytest

import ingle

from conftest import qwen_gguf

TEMPLATES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "chat-templates"
FAMILIES = sorted(p.stem for p in TEMPLATES.glob("*.jinja"))

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city."}},
                   "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Get the time in a time zone.",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}


def call(id: str, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


CASES: Dict[str, Dict[str, Any]] = {
    "system_and_user": dict(messages=[{"role": "system", "content": "You are terse."},
                                      {"role": "user", "content": "Hi there — ça va?"}]),
    "multi_turn": dict(messages=[{"role": "user", "content": "Name a colour."},
                                 {"role": "assistant", "content": "Blue."},
                                 {"role": "user", "content": "Another."}]),
    "tools": dict(tools=[WEATHER, TIME], messages=[{"role": "user", "content": "Weather in Lisbon?"}]),
    "tool_result": dict(tools=[WEATHER], messages=[
        {"role": "user", "content": "Weather in Lisbon?"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_1", "get_weather", {"city": "Lisbon"})]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"}]),
    "parallel_calls": dict(tools=[WEATHER, TIME], messages=[
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "Weather and time in São Paulo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            call("call_1", "get_weather", {"city": "São Paulo"}), call("call_2", "get_time", {"zone": "America/Sao_Paulo"})]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Rain"},
        {"role": "tool", "tool_call_id": "call_2", "content": "14:05"}]),
    "thinking_off": dict(chat_template_kwargs={"enable_thinking": False},
                         messages=[{"role": "user", "content": "2 + 2?"}]),
    "reasoning_effort": dict(chat_template_kwargs={"reasoning_effort": "high"},
                             messages=[{"role": "user", "content": "2 + 2?"}]),
}


def reference_environment() -> jinja2.Environment:
    """transformers' `_compile_jinja_template`: a sandbox, trim_blocks and lstrip_blocks, loop
    controls, its `tojson`, `raise_exception` and `strftime_now`."""
    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Optional[int] = None,
               separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format: str) -> str:
        # transformers uses local time, ingle UTC (its docs): the same on any machine here.
        return datetime.datetime.now(datetime.timezone.utc).strftime(format)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def as_transformers_takes_them(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The messages as a transformers user passes them: a call's arguments as a dict (what HF
    templates index into), the rest as the OpenAI client sent it (a call's `content: null`)."""
    out = []
    for message in messages:
        message = dict(message)
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                for c in message["tool_calls"]]
        out.append(message)
    return out


def call_variant(messages: List[Dict[str, Any]], text_arguments: bool, blank_content: bool) -> List[Dict[str, Any]]:
    out = []
    for m in messages:
        if m["role"] == "assistant":
            m = dict(m)
            if blank_content and m.get("content") is None:
                m["content"] = ""
            if text_arguments and m.get("tool_calls"):
                m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"], ensure_ascii=False)}}
                                   for c in m["tool_calls"]]
        out.append(m)
    return out


@pytest.fixture(scope="module")
def families() -> ingle.OpenAI:
    gguf = qwen_gguf()
    predictors = [{"tag": f"@t/{name}", "backend": "llama", "model": gguf, "n_ctx": 2048,
                   "chat_template": (TEMPLATES / f"{name}.jinja").read_text()} for name in FAMILIES]
    predictors.append({"tag": "@t/special", "backend": "llama", "model": gguf, "n_ctx": 512,
                       "chat_template": "{{ bos_token }}\n{{ eos_token }}"})
    return ingle.OpenAI(config={"builtin_models": False, "predictors": predictors})


def compare(families: ingle.OpenAI, family: str) -> List[str]:
    """Each case's difference between ingle and jinja2, if any."""
    bos, eos = families.chat.completions.render(model="@t/special", messages=[{"role": "user", "content": "x"}]).split("\n")
    template = reference_environment().from_string((TEMPLATES / f"{family}.jinja").read_text())
    problems = []
    for name, case in CASES.items():
        kwargs = dict(case.get("chat_template_kwargs", {}))
        if family.endswith("-tool_use") and "tools" not in case:
            continue  # transformers renders those with the model's default template
        reason = ""
        messages = as_transformers_takes_them(case["messages"])
        render = lambda messages: template.render(  # noqa: E731
            messages=messages, tools=case.get("tools"), add_generation_prompt=True,
            bos_token=bos, eos_token=eos, **kwargs)
        try:
            expected: Optional[str] = render(messages)
        except Exception as refused:  # what transformers raises too (TemplateError, TypeError...)
            expected, reason = None, f"{type(refused).__name__}: {refused}"
            # A template written for other shapes of a call: ingle, as llama.cpp, gives it the
            # arguments as JSON text, then `content: null` as "", then both.
            for variant in (call_variant(messages, True, False), call_variant(messages, False, True),
                            call_variant(messages, True, True)):
                if variant == messages:
                    continue
                try:
                    expected = render(variant)
                    break
                except Exception:
                    pass
        try:
            got: Optional[str] = families.chat.completions.render(model=f"@t/{family}", **case)
        except ingle.BadRequestError as refused:
            # Where a template drops what it is given, transformers leaves it out of the prompt
            # unsaid and ingle refuses it (docs/tools.md): tools a template has no place for,
            # earlier calls it does not show.
            dropped = {"tools": "Get the current weather in a city.", "tool_calls": '"city"'}
            kind = (refused.param or "").rsplit(".", 1)[-1]
            if expected is not None and kind in dropped and dropped[kind] not in expected:
                continue
            got, reason = None, f"ingle: {refused.message}"
        if got != expected:
            problems.append(f"{name}: {reason}\n  jinja2: {expected!r}\n  ingle:  {got!r}")
    return problems


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_renders_as_transformers_does(families: ingle.OpenAI, family: str) -> None:
    try:
        problems = compare(families, family)
    finally:
        families.models.unload(f"@t/{family}")
    assert not problems, f"{family}:\n" + "\n".join(problems)
