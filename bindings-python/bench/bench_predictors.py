"""What serving a Python function as a predictor costs per step, next to iterating the same
generator directly (the anchor) in the same run: a generator yielding N small ints, pulled
through `predictions.stream` and through `chat.completions.create(stream=True)` (a chunk per
yield). Medians of BENCH_ROUNDS (default 5) interleaved rounds."""

import os
import statistics
import time
from typing import Iterator

import ingle
from ingle import predictor
from ingle.types import ChatCompletionMessageParam

N = int(os.environ.get("BENCH_STEPS", "20000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))


def numbers(n: int) -> Iterator[int]:
    for i in range(n):
        yield i


@predictor(tag="@bench/count")
def count(n: int) -> Iterator[int]:
    yield from numbers(n)


@predictor(tag="@bench/words")
def words(messages: list[ChatCompletionMessageParam]) -> Iterator[str]:
    for _ in range(N):
        yield "a"


client = ingle.OpenAI(predictors=[count, words])


def direct() -> float:
    start = time.perf_counter()
    for _ in numbers(N):
        pass
    return time.perf_counter() - start


def predictions() -> float:
    start = time.perf_counter()
    seen = sum(1 for _ in client.predictions.stream(tag="@bench/count", inputs={"n": N}))
    assert seen == N
    return time.perf_counter() - start


def chat() -> float:
    start = time.perf_counter()
    stream = client.chat.completions.create(model="@bench/words", messages=[{"role": "user", "content": "x"}], stream=True)
    seen = sum(1 for c in stream if c.choices and c.choices[0].delta.content)
    assert seen == N
    return time.perf_counter() - start


times = {"direct": [], "predictions.stream": [], "chat stream": []}
for _ in range(ROUNDS):
    for name, run in (("direct", direct), ("predictions.stream", predictions), ("chat stream", chat)):
        times[name].append(run())
anchor = statistics.median(times["direct"]) / N
print(f"{N} steps, medians of {ROUNDS} rounds")
for name, values in times.items():
    per_step = statistics.median(values) / N
    print(f"{name:20s} {per_step * 1e6:8.2f} µs/step  ({per_step / anchor:7.1f}× the plain generator)")
