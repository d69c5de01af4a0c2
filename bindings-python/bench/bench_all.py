"""Every speed figure of ingle in one table, each next to its anchor measured in the same run, as
a ratio; also written as JSON (BENCH_JSON, default bench.json). Figures, not a test: run with
scripts/bench, which builds and installs what this needs.

Rows (greedy, the machine's physical cores as threads):
- chat decode tok/s, prefill tok/s and time to first token, SmolLM2-135M and Qwen2.5-0.5B,
  through the Python package, `ingle serve` (the openai SDK) and the Rust core, against
  llama-cpp-python built for this CPU (interleaved runs, every prompt new from its first token
  so no prompt cache helps either side);
- aggregate decode of 4 and 8 concurrent streams against one (`parallel = 8`), and against
  the same numbers of sequences decoded together by bare llama.cpp calls on the same build and
  the same context per sequence (core/examples/batched_bench.rs, llama-batched-bench's loop),
  from Python threads and from Rust threads (core/examples/stream_scaling.rs);
- time to first token p95 with 8 clients arriving at once, and with 8 clients each sending one
  request after another, against a lone client's;
- time to first token of a follow-up turn after ~1,000 tokens of history against a cold start;
- embeddings: 8 concurrent single-sentence callers against one caller sending batches of 32
  (through the Python package and in the Rust core, core/examples/embedding_concurrency.rs).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from machine import physical_cores

SMOL = ("@local/smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
QWEN = ("@local/qwen2.5-coder-0.5b-instruct", "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf")
EMBED = "@local/all-minilm-l6-v2"
TOKENS = 128
# Context per sequence of the batching runs, ingle's and the bare loop's alike: llama.cpp
# attends over the used KV cells padded to 256, capped by it.
BATCH_CTX = 1024
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
MODELS_DIR = os.environ.get("INGLE_MODELS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models"
)
CONTEXT = (
    "The Loire is the longest river in France. It flows through Orléans, Tours and Nantes. "
    "Its valley is known for its castles, vineyards and gardens. "
) * 6
QUESTION = CONTEXT + "\nWrite a long, detailed essay about the Loire valley and its history."
_run = iter(range(1_000_000))


def messages():
    """A prompt new from its first token (no prompt cache applies), same length every time."""
    return [
        {"role": "system", "content": f"Request {next(_run):06d}. You are a helpful AI assistant."},
        {"role": "user", "content": QUESTION},
    ]


THREADS = physical_cores()
ROWS = []


def row(section, name, value, unit, anchor=None, anchor_name=None, higher_is_better=True):
    ratio = None
    if anchor:
        ratio = value / anchor if higher_is_better else anchor / value
    ROWS.append({"section": section, "name": name, "value": value, "unit": unit,
                 "anchor": anchor, "anchor_name": anchor_name, "ratio": ratio,
                 "higher_is_better": higher_is_better})
    shown = f"{value:10.1f} {unit:<8}"
    if anchor:
        shown += f" vs {anchor:10.1f}  {anchor_name:<26} {ratio:5.2f}x"
    print(f"{section:<14} {name:<44} {shown}", flush=True)


def stream_figures(chunks, prompt_tokens):
    """(ttft s, decode tok/s, prefill tok/s, pieces) of a stream of text pieces."""
    start = time.perf_counter()
    first, pieces = None, 0
    for text in chunks:
        if text:
            pieces += 1
            if first is None:
                first = time.perf_counter()
    end = time.perf_counter()
    ttft = first - start
    return ttft, (pieces - 1) / (end - first), prompt_tokens / ttft, pieces


def ingle_chunks(client, model):
    stream = client.chat.completions.create(
        model=model, messages=messages(), max_tokens=TOKENS, temperature=0, stream=True
    )
    for chunk in stream:
        if chunk.choices:
            yield chunk.choices[0].delta.content


def prompt_tokens_of(client, model):
    r = client.chat.completions.create(model=model, messages=messages(), max_tokens=1, temperature=0)
    return r.usage.prompt_tokens


def median_figures(runs):
    return [statistics.median(r[i] for r in runs) for i in range(3)]


def chat_vs_llama_cpp_python(ingle, serve_client, model, gguf):
    try:
        from llama_cpp import Llama
    except ImportError:
        Llama = None
    tag = model.split("/")[-1]
    n_prompt = prompt_tokens_of(ingle, model)
    llm = None
    if Llama is not None:
        llm = Llama(os.path.join(MODELS_DIR, gguf), n_ctx=2048, n_threads=THREADS,
                    n_threads_batch=THREADS, verbose=False)

    def anchor_chunks():
        llm.reset()  # forget the previous prompt: no cache on this side either
        for chunk in llm.create_chat_completion(messages=messages(), max_tokens=TOKENS,
                                                temperature=0, stream=True):
            yield chunk["choices"][0]["delta"].get("content")

    doors = {"python": lambda: ingle_chunks(ingle, model)}
    if serve_client is not None:
        doors["serve"] = lambda: ingle_chunks(serve_client, model)
    runs = {door: [] for door in doors}
    anchor = []
    for door in doors:  # warm-up
        stream_figures(doors[door](), n_prompt)
    if llm is not None:
        stream_figures(anchor_chunks(), n_prompt)
    for _ in range(RUNS):  # interleaved: every side sees the same machine
        for door in doors:
            runs[door].append(stream_figures(doors[door](), n_prompt))
        if llm is not None:
            anchor.append(stream_figures(anchor_chunks(), n_prompt))
    a = median_figures(anchor) if anchor else [None] * 3
    for door in doors:
        ttft, decode, prefill = median_figures(runs[door])
        an = "llama-cpp-python"
        row(f"chat {tag[:9]}", f"decode tok/s, {door} ({n_prompt}-token prompt)", decode, "tok/s", a[1], an)
        row(f"chat {tag[:9]}", f"prefill tok/s, {door}", prefill, "tok/s", a[2], an)
        row(f"chat {tag[:9]}", f"time to first token, {door}", ttft * 1000, "ms",
            a[0] and a[0] * 1000, an, higher_is_better=False)
    if llm is None:
        print("  (llama-cpp-python is not installed in this venv: no anchor)")


def rust_core():
    out = subprocess.run(
        ["cargo", "run", "--release", "--locked", "-q", "-p", "ingle-core", "--example",
         "bench_chat", "--", "--core-json"], check=True, capture_output=True, text=True).stdout
    core = json.loads(out)
    row("chat smollm2-1", "decode tok/s, Rust core", core["decode_tps"], "tok/s")
    row("chat smollm2-1", "time to first token, Rust core", core["ttft_ms"], "ms")


def concurrent(client, model, n, max_tokens=TOKENS):
    """n streams at once: (aggregate decode tok/s while all n decode, time to first token of
    each). Every stream's prompt is new (no cache); they start together."""
    results = [None] * n

    def one(i):
        start = time.perf_counter()
        stamps = []
        stream = client.chat.completions.create(
            model=model, messages=messages(), max_tokens=max_tokens, temperature=0.8, seed=i,
            stream=True)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                stamps.append(time.perf_counter())
        results[i] = (start, stamps)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Steady state: from the moment the last stream has its first token (all prompts are in)
    # to the moment the first stream ends; the tokens of every stream in that window.
    begin = max(r[1][0] for r in results)
    end = min(r[1][-1] for r in results)
    tokens = sum(1 for r in results for t in r[1] if begin < t <= end)
    rate = tokens / (end - begin) if end > begin else float("nan")
    return rate, [r[1][0] - r[0] for r in results]


def loaded_ttft_p95(client, model, lone, clients=8, seconds=30.0):
    """Time to first token under steady load: `clients` clients each sending requests one
    after the other (a new prompt of the same length, up to TOKENS tokens sampled), their first
    requests spread over one lone TTFT per client so they do not arrive in lockstep. The p95 of
    every request's TTFT after each client's first."""
    stop = time.perf_counter() + seconds
    ttfts = [[] for _ in range(clients)]

    def client_loop(k):
        time.sleep(k * lone)
        while time.perf_counter() < stop:
            start = time.perf_counter()
            first = None
            for chunk in client.chat.completions.create(
                    model=model, messages=messages(), max_tokens=TOKENS, temperature=0.8, seed=k,
                    stream=True):
                if first is None and chunk.choices and chunk.choices[0].delta.content:
                    first = time.perf_counter() - start
            ttfts[k].append(first)

    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    steady = sorted(t for per_client in ttfts for t in per_client[1:] if t is not None)
    return steady[int(0.95 * (len(steady) - 1))]


def batched_bench():
    """Decode tok/s over all sequences for 1, 4, 8 sequences, decoded together with bare
    llama-cpp-2 calls (core/examples/batched_bench.rs: llama-batched-bench's loop, whose source
    the vendored llama.cpp does not ship)."""
    out = subprocess.run(
        ["cargo", "run", "--release", "--locked", "-q", "-p", "ingle-core", "--example",
         "batched_bench", "--", "250", str(TOKENS), "1,4,8", str(BATCH_CTX)],
        check=True, capture_output=True, text=True).stdout
    return {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}


def batching(ingle_module):
    config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    config.write(f'models_dir = "{MODELS_DIR}"\n[[predictors]]\ntag = "@bench/smollm2-p8"\n'
                 f'backend = "llama"\nmodel = "{SMOL[1]}"\nparallel = 8\nn_ctx = {BATCH_CTX}\n')
    config.close()
    client = ingle_module.OpenAI(config=config.name)
    model = "@bench/smollm2-p8"
    concurrent(client, model, 1)  # warm-up
    agg = {n: statistics.median(concurrent(client, model, n)[0] for _ in range(2)) for n in (1, 4, 8)}
    anchor = batched_bench()
    for n in (4, 8):
        row("batching", f"aggregate tok/s, {n} streams vs 1 (ingle)", agg[n], "tok/s", agg[1], "1 stream")
        if anchor:
            row("batching", f"aggregate tok/s, {n} streams vs llama.cpp", agg[n], "tok/s", anchor[n],
                f"bare llama.cpp, {n} seqs")
    if anchor:
        row("batching", "bare llama.cpp, 8 seqs vs 1", anchor[8], "tok/s", anchor[1], "its 1 seq")
    # The same streams from Rust threads (core/examples/stream_scaling.rs): what Python costs.
    out = subprocess.run(
        ["cargo", "run", "--release", "--locked", "-q", "-p", "ingle-core", "--example",
         "stream_scaling", "--", "0.8", "1,4,8"], check=True, capture_output=True, text=True).stdout
    core = {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}
    for n in (4, 8):
        if anchor:
            row("batching", f"aggregate tok/s, {n} streams vs llama.cpp, Rust core", core[n],
                "tok/s", anchor[n], f"bare llama.cpp, {n} seqs")
    lone = statistics.median(concurrent(client, model, 1, max_tokens=16)[1][0] for _ in range(3))
    ttfts = []
    for _ in range(3):
        ttfts += concurrent(client, model, 8, max_tokens=16)[1]
    p95 = sorted(ttfts)[int(0.95 * (len(ttfts) - 1))]
    row("batching", "TTFT p95, 8 clients arriving at once", p95 * 1000, "ms", lone * 1000,
        "a lone client", higher_is_better=False)
    p95 = loaded_ttft_p95(client, model, lone)
    row("batching", "TTFT p95, 8 clients in a loop (steady)", p95 * 1000, "ms", lone * 1000,
        "a lone client", higher_is_better=False)
    os.unlink(config.name)


def prompt_cache(client):
    notes = "You are a helpful assistant. These are the notes of this week's planning meeting.\n" + "".join(
        f"Note {i}: the team reviewed task {i} of the release plan, assigned it to group "
        f"{i % 5 + 1} and agreed to report on it by day {i % 7 + 1}.\n" for i in range(1, 41))
    model = SMOL[0]

    def ttft(msgs):
        start = time.perf_counter()
        for chunk in client.chat.completions.create(model=model, messages=msgs, max_tokens=8,
                                                    temperature=0, stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                return time.perf_counter() - start

    cold, warm = [], []
    for i in range(RUNS + 1):
        system = {"role": "system", "content": f"Meeting {i}. " + notes}
        first = [system, {"role": "user", "content": "Which group has task 3?"}]
        answer = client.chat.completions.create(model=model, messages=first, max_tokens=32,
                                                temperature=0).choices[0].message.content
        follow = first + [{"role": "assistant", "content": answer},
                          {"role": "user", "content": "And task 7?"}]
        # Cold: the same conversation under a new first line, so nothing is shared.
        cold_follow = [dict(system, content=f"Meeting {i}b. " + notes)] + follow[1:]
        if i:  # the first round warms up
            warm.append(ttft(follow))
            cold.append(ttft(cold_follow))
    row("prompt cache", "TTFT of turn 2, ~1,000 tokens of history", statistics.median(warm) * 1000,
        "ms", statistics.median(cold) * 1000, "the same, cold", higher_is_better=False)


def embeddings(client):
    sentences = [f"The river number {i} flows quietly past the old mill at dawn." for i in range(512)]
    client.embeddings.create(model=EMBED, input=sentences[:32])
    seconds = 3.0

    def batched():
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            client.embeddings.create(model=EMBED, input=sentences[n % 480:n % 480 + 32])
            n += 32
        return n / (time.perf_counter() - start)

    def singles():
        counts = [0] * 8
        stop = time.perf_counter() + seconds

        def caller(k):
            while time.perf_counter() < stop:
                client.embeddings.create(model=EMBED, input=sentences[(k * 61 + counts[k]) % 512])
                counts[k] += 1

        start = time.perf_counter()
        threads = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - start)

    # Interleaved, best of 3 each: the figures are bounded by the machine, noise only lowers them.
    b, s = [], []
    for _ in range(3):
        b.append(batched())
        s.append(singles())
    row("embeddings", "8 concurrent callers, 1 sentence each", max(s), "sent/s", max(b),
        "1 caller, batches of 32")
    # The same in the Rust core, without Python between calls.
    out = subprocess.run(
        ["cargo", "run", "--release", "--locked", "-q", "-p", "ingle-core", "--example",
         "embedding_concurrency", "--", "3", "8"], check=True, capture_output=True,
        text=True).stdout
    core = json.loads(out)
    row("embeddings", "8 concurrent callers, Rust core", core["concurrent_singles"], "sent/s",
        core["batches_of_32"], "1 caller, batches of 32")


def main():
    import ingle

    info = ingle.system_info()
    print(f"ingle {info['version']}, llama.cpp CPU variant {info['cpu_variant']}, {THREADS} threads,"
          f" {TOKENS} tokens greedy, median of {RUNS} interleaved runs")
    client = ingle.OpenAI()
    serve_client = None
    if os.environ.get("INGLE_SERVE_URL"):
        import openai
        serve_client = openai.OpenAI(base_url=os.environ["INGLE_SERVE_URL"], api_key="none")
    started = time.time()
    only = os.environ.get("BENCH_ONLY")
    if only == "batching":
        return batching(ingle)
    if only == "embeddings":
        return embeddings(client)
    for model, gguf in (SMOL, QWEN):
        if os.path.exists(os.path.join(MODELS_DIR, gguf)):
            chat_vs_llama_cpp_python(client, serve_client, model, gguf)
    if os.environ.get("BENCH_SKIP_CORE") != "1":
        rust_core()
    batching(ingle)
    prompt_cache(client)
    embeddings(client)
    path = os.environ.get("BENCH_JSON", "bench.json")
    with open(path, "w") as f:
        json.dump({"system": info, "threads": THREADS, "seconds": time.time() - started,
                   "rows": ROWS}, f, indent=2)
    print(f"({time.time() - started:.0f} s; JSON in {path})")


if __name__ == "__main__":
    sys.exit(main())
