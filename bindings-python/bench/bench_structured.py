"""Constrained output on Qwen2.5-Coder-0.5B, greedy: an extraction of 10 fields (nested object,
enum, array, numbers) through response_format json_schema, and a forced tool call (tool_choice
naming the function). Wall time, output tokens and tokens/s of ingle with jump-forward decoding
(its default), of ingle without it (jump_forward = false), and of llama-cpp-python with the
same schema when it is installed in the bench venv (scripts/bench structured --with-anchor);
same machine, same run, ratios printed. Each system must produce the same JSON: a different
value is reported, not hidden. Figures, not a test. Run with scripts/bench structured."""

import json
import os
import statistics
import sys
import tempfile
import time

from machine import physical_cores

MODEL = "@local/qwen2.5-coder-0.5b-instruct"
PLAIN = "@bench/qwen-without-jump-forward"
GGUF = "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"
RUNS = 3

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "email": {"type": "string"},
        "height_m": {"type": "number"},
        "married": {"type": "boolean"},
        "role": {"type": "string", "enum": ["engineer", "doctor", "teacher", "artist"]},
        "languages": {"type": "array", "items": {"type": "string"}},
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string"},
                "country": {"type": "string"},
            },
            "required": ["street", "city", "country"],
        },
        "children": {"type": "integer"},
        "salary_eur": {"type": "number"},
    },
    "required": ["name", "age", "email", "height_m", "married", "role", "languages", "address",
                 "children", "salary_eur"],
}
PERSON = (
    "Maria Keller, 41, is a doctor living at 12 Rosenweg in Basel, Switzerland. Her email is "
    "maria.keller@example.ch. She is 1.68 m tall, married with two children, speaks German, "
    "French and English, and earns 145000.50 EUR a year. Extract her details as JSON."
)
BOOK_FLIGHT = {
    "type": "function",
    "function": {
        "name": "book_flight",
        "description": "Book a flight.",
        "parameters": {
            "type": "object",
            "properties": {
                "from": {"type": "string"},
                "to": {"type": "string"},
                "date": {"type": "string", "description": "YYYY-MM-DD"},
                "class": {"type": "string", "enum": ["economy", "business", "first"]},
                "passengers": {"type": "integer"},
                "seats": {"type": "array", "items": {"type": "string"}},
                "meal": {"type": "string", "enum": ["standard", "vegetarian", "vegan"]},
            },
            "required": ["from", "to", "date", "class", "passengers", "seats", "meal"],
        },
    },
}
BOOKING = (
    "Book 2 business class seats, 3A and 3C, from Zurich to Lisbon on 2027-03-14, vegetarian "
    "meals."
)

TASKS = {
    "extraction": dict(
        messages=[{"role": "user", "content": PERSON}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "Person", "schema": PERSON_SCHEMA}},
        max_tokens=300,
    ),
    "forced tool call": dict(
        messages=[{"role": "user", "content": BOOKING}],
        tools=[BOOK_FLIGHT],
        tool_choice={"type": "function", "function": {"name": "book_flight"}},
        max_tokens=300,
    ),
}


def models_dir():
    return os.environ.get("INGLE_MODELS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models")


def value_of(message):
    """The JSON a reply carries: its content, or its one tool call's arguments."""
    calls = message.get("tool_calls") or []
    if calls:
        return json.loads(calls[0]["function"]["arguments"])
    return json.loads(message["content"])


def timed(call):
    start = time.perf_counter()
    reply = call()
    seconds = time.perf_counter() - start
    return seconds, reply["usage"]["completion_tokens"], value_of(reply["choices"][0]["message"])


def ingle_call(client, model, task):
    return lambda: client.chat.completions.create(
        model=model, temperature=0, **TASKS[task]).model_dump()


def llama_cpp_python_call(llm, task):
    params = dict(TASKS[task])
    if "response_format" in params:
        schema = params.pop("response_format")["json_schema"]["schema"]
        params["response_format"] = {"type": "json_object", "schema": schema}
    return lambda: llm.create_chat_completion(temperature=0, **params)


def measure(call):
    call()  # warm-up (grammar compiled, prompt cache as cold as the others')
    runs = [timed(call) for _ in range(RUNS)]
    return statistics.median(r[0] for r in runs), runs[-1][1], runs[-1][2]


def main():
    import ingle

    threads = physical_cores()
    config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    config.write(f'[[predictors]]\ntag = "{PLAIN}"\nbackend = "llama"\nmodel = "{GGUF}"\n'
                 f'threads = {threads}\njump_forward = false\n')
    config.close()
    client = ingle.OpenAI(config=config.name)
    try:
        from llama_cpp import Llama
    except ImportError:
        Llama = None
    llm = None
    if Llama is not None:
        llm = Llama(os.path.join(models_dir(), GGUF), n_ctx=2048, n_threads=threads,
                    n_threads_batch=threads, verbose=False)

    print(f"model {MODEL}, {threads} threads, greedy, median wall time of {RUNS}")
    print(f"{'':<40}{'wall s':>8}{'tokens':>8}{'tok/s':>8}{'speed-up':>10}  same JSON")
    for task in TASKS:
        rows = [("ingle", measure(ingle_call(client, MODEL, task))),
                ("ingle, jump_forward = false", measure(ingle_call(client, PLAIN, task)))]
        if llm is not None:
            rows.append(("llama-cpp-python", measure(llama_cpp_python_call(llm, task))))
        seconds, _, value = rows[0][1]
        for name, (wall, tokens, other) in rows:
            print(f"{task + ': ' + name:<40}{wall:>8.2f}{tokens:>8}{tokens / wall:>8.1f}"
                  f"{wall / seconds:>9.2f}×  {'yes' if other == value else 'NO: ' + json.dumps(other)}")
        print(f"{task}: {json.dumps(value)}")
    if llm is None:
        print("(llama-cpp-python is not installed: scripts/bench structured --with-anchor)")
    os.unlink(config.name)


if __name__ == "__main__":
    sys.exit(main())
