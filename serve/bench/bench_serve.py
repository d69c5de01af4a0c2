"""`ingle serve` under 1, 4 and 8 concurrent streaming clients (the official `openai` package on
loopback), next to the same load on the in-process Python package (no HTTP) in the same run:
aggregate completion tokens/s, time to first token p50/p95, errors. Figures, not a test.
Run with scripts/bench serve, which starts the server and sets INGLE_SERVE_URL."""

import os
import statistics
import threading
import time

import ingle
import openai

MODEL = "@local/smollm2-135m-instruct"
TOKENS = 128
REQUESTS_PER_CLIENT = 2
PROMPTS = [
    "Write a long story about a lighthouse keeper.",
    "Explain in detail how bread is made.",
    "Describe a journey across the Alps.",
    "Write a long letter to a friend about your garden.",
]


def one(create, i, results):
    """Streams one completion; appends (ttft_s, completion_tokens, error)."""
    start = time.perf_counter()
    ttft, tokens = None, 0
    try:
        stream = create(
            model=MODEL,
            messages=[{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
            max_tokens=TOKENS,
            temperature=0.7,
            seed=i,
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            if ttft is None and chunk.choices and chunk.choices[0].delta.content:
                ttft = time.perf_counter() - start
            if chunk.usage:
                tokens = chunk.usage.completion_tokens
        results.append((ttft, tokens, None))
    except Exception as e:  # counted, not raised: errors are a figure
        results.append((ttft, tokens, repr(e)))


def load(create, clients):
    """`clients` threads, each streaming REQUESTS_PER_CLIENT completions back to back."""
    results = []

    def client(c):
        for r in range(REQUESTS_PER_CLIENT):
            one(create, c * 100 + r, results)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ttfts = sorted(r[0] for r in results if r[0] is not None)
    tokens = sum(r[1] for r in results)
    errors = [r[2] for r in results if r[2]]
    p95 = ttfts[min(len(ttfts) - 1, int(0.95 * len(ttfts)))] if ttfts else float("nan")
    return tokens / wall, statistics.median(ttfts) if ttfts else float("nan"), p95, errors


def main():
    http = openai.OpenAI(base_url=os.environ["INGLE_SERVE_URL"], api_key="unused", max_retries=0)
    local = ingle.OpenAI()
    engines = [("ingle serve (openai SDK over HTTP)", http.chat.completions.create),
               ("ingle Python package (in-process)", local.chat.completions.create)]
    for _, create in engines:  # load the model and warm up
        load(create, 1)
    print(f"# {MODEL}, {TOKENS} tokens per request, {REQUESTS_PER_CLIENT} requests per client, "
          "temperature 0.7; the server and the in-process client each load the model once")
    print()
    print("| clients | engine | tokens/s (all clients) | TTFT p50 | TTFT p95 | errors |")
    print("|---|---|---|---|---|---|")
    for clients in (1, 4, 8):
        rates = []
        for name, create in engines:
            rate, p50, p95, errors = load(create, clients)
            rates.append(rate)
            print(f"| {clients} | {name} | {rate:.1f} | {p50 * 1000:.0f} ms | {p95 * 1000:.0f} ms "
                  f"| {len(errors)} |", flush=True)
            for e in errors[:3]:
                print(f"|   | error: {e[:120]} | | | | |")
        print(f"| {clients} | serve / in-process | {rates[0] / rates[1]:.2f} | | | |", flush=True)


if __name__ == "__main__":
    main()
