"""Streamed chat through the Python package vs the Rust core (and llama-cpp-python when it is
installed): decode tokens/s and time to first token, same model, prompt, threads and settings
as core/examples/bench_chat.rs. Figures, not a test. Run with scripts/bench python."""

import json
import os
import statistics
import subprocess
import sys
import time

from machine import physical_cores

MODEL = "@local/smollm2-135m-instruct"
TOKENS = 128
RUNS = 3
CONTEXT = (
    "The Loire is the longest river in France. It flows through Orléans, Tours and Nantes. "
    "Its valley is known for its castles, vineyards and gardens. "
) * 6
QUESTION = CONTEXT + "\nWrite a long, detailed essay about the Loire valley and its history."
MESSAGES = [{"role": "user", "content": QUESTION}]


def measure(stream_fn):
    """Runs one streamed completion; returns (ttft_s, decode tokens/s, completion tokens)."""
    start = time.perf_counter()
    first = None
    pieces = 0
    for text in stream_fn():
        if text:
            pieces += 1
            if first is None:
                first = time.perf_counter()
    end = time.perf_counter()
    return first - start, (pieces - 1) / (end - first), pieces


def ingle_stream(client):
    def run():
        stream = client.chat.completions.create(
            model=MODEL, messages=MESSAGES, max_tokens=TOKENS, temperature=0, stream=True
        )
        for chunk in stream:
            if chunk.choices:
                yield chunk.choices[0].delta.content
    return run


def llama_cpp_python_stream(llm):
    def run():
        # Forget the previous prompt: Llama reuses a matching prefix of its context, which
        # would turn the prefill into a cache hit that ingle's runs do not get.
        llm.reset()
        for chunk in llm.create_chat_completion(
            messages=MESSAGES, max_tokens=TOKENS, temperature=0, stream=True
        ):
            yield chunk["choices"][0]["delta"].get("content")
    return run


def summarize(name, runs):
    ttft = statistics.median(r[0] for r in runs) * 1000
    tps = statistics.median(r[1] for r in runs)
    return name, tps, ttft


def main():
    import ingle

    rows = []
    client = ingle.OpenAI()
    measure(ingle_stream(client))  # warm-up: load the model
    rows.append(summarize("ingle (Python)", [measure(ingle_stream(client)) for _ in range(RUNS)]))

    core = json.loads(
        subprocess.run(
            ["cargo", "run", "--release", "--locked", "-q", "-p", "ingle-core",
             "--example", "bench_chat", "--", "--core-json"],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    rows.append(("ingle (Rust core)", core["decode_tps"], core["ttft_ms"]))

    try:
        from llama_cpp import Llama
    except ImportError:
        Llama = None
    if Llama is not None:
        models_dir = os.environ.get("INGLE_MODELS_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models"
        )
        llm = Llama(
            os.path.join(models_dir, "SmolLM2-135M-Instruct.Q4_1.gguf"),
            n_ctx=2048, n_threads=physical_cores(), n_threads_batch=physical_cores(), verbose=False,
        )
        measure(llama_cpp_python_stream(llm))
        rows.append(summarize("llama-cpp-python", [measure(llama_cpp_python_stream(llm)) for _ in range(RUNS)]))

    print(f"model {MODEL}, {physical_cores()} threads, {TOKENS} tokens greedy, median of {RUNS}")
    print(f"{'':<22}{'decode tok/s':>14}{'TTFT ms':>10}{'tok/s vs core':>15}")
    for name, tps, ttft in rows:
        print(f"{name:<22}{tps:>14.1f}{ttft:>10.1f}{tps / core['decode_tps']:>15.2f}")
    if Llama is None:
        print("(llama-cpp-python is not installed: pip install llama-cpp-python to compare)")
    else:
        print("(llama-cpp-python from PyPI builds llama.cpp for this CPU; ingle loads the CPU"
              " variant of its kernels that suits this machine)")


if __name__ == "__main__":
    sys.exit(main())
