import asyncio
import gc
import os
import signal
import threading
import time

import pytest

import ingle
from conftest import FRANCE, MODEL, wait_idle

STORY = [{"role": "user", "content": "Write a very long story about a dragon."}]
# Greedy, the story runs to any max_tokens up to 1800 every time; a sampled one sometimes ends
# within half a second, and the cancellation tests then have nothing to cancel.
LONG = {"messages": STORY, "temperature": 0}


@pytest.fixture
def sigint_raises():
    """Ctrl-C raises KeyboardInterrupt here, however pytest was started: a shell starts a
    background job (`scripts/test &`) with SIGINT ignored, and Python then installs no handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def long_stream(client):
    return client.chat.completions.create(model=MODEL, **LONG, max_tokens=500, stream=True)


@pytest.mark.parametrize("how", ["break", "close", "with", "gc"])
def test_stopping_a_stream_cancels_generation(client, how):
    before = wait_idle(client)["cancelled_requests"]
    if how == "break":
        for i, _ in enumerate(long_stream(client)):
            if i == 3:
                break
    elif how == "close":
        stream = long_stream(client)
        next(stream), next(stream)
        stream.close()
        with pytest.raises(StopIteration):
            next(stream)
    elif how == "with":
        with long_stream(client) as stream:
            next(stream)
    else:
        stream = long_stream(client)
        next(stream)
        del stream
        gc.collect()
    after = wait_idle(client)
    assert after["cancelled_requests"] == before + 1
    # And the next request is served at once.
    r = client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=3)
    assert r.usage.completion_tokens == 3


def test_keyboard_interrupt_cancels_the_stream(client, sigint_raises):
    before = wait_idle(client)["cancelled_requests"]
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    chunks = 0
    with pytest.raises(KeyboardInterrupt):
        timer.start()
        for _ in long_stream(client):
            chunks += 1
    timer.join()
    assert 0 < chunks < 400
    assert wait_idle(client)["cancelled_requests"] == before + 1


def test_gil_is_released_while_generating(client):
    ticks = 0
    running = True

    def ticker():
        nonlocal ticks
        while running:
            ticks += 1
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    start = time.monotonic()
    client.chat.completions.create(model=MODEL, messages=STORY, max_tokens=48)
    elapsed = time.monotonic() - start
    running = False
    thread.join()
    # A ticker starved by a held GIL would tick a handful of times; a free one ~1 per ms.
    assert ticks > elapsed * 1000 * 0.3, (ticks, elapsed)


def test_threads_share_one_client(client):
    results = {}

    def ask(i):
        r = client.chat.completions.create(
            model=MODEL, messages=FRANCE, max_tokens=10, temperature=0
        )
        results[i] = r.choices[0].message.content

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all("Paris" in text for text in results.values())


def test_async_create_stream_and_models():
    async def main():
        async with ingle.AsyncOpenAI() as aclient:
            r = await aclient.chat.completions.create(
                model=MODEL, messages=FRANCE, max_tokens=12, temperature=0
            )
            assert "Paris" in r.choices[0].message.content
            stream = await aclient.chat.completions.create(
                model=MODEL, messages=FRANCE, max_tokens=12, temperature=0, stream=True
            )
            text = ""
            async for chunk in stream:
                text += chunk.choices[0].delta.content or "" if chunk.choices else ""
            assert text == r.choices[0].message.content
            c = await aclient.completions.create(model=MODEL, prompt="Hello", max_tokens=3)
            assert c.usage.completion_tokens == 3
            assert MODEL in [m.id for m in await aclient.models.list()]
            p = await aclient.predictions.create(tag=MODEL, inputs={"prompt": "Hi", "max_tokens": 2})
            assert p.error is None
            with pytest.raises(ingle.NotFoundError):
                await aclient.chat.completions.create(model="@nobody/nothing", messages=FRANCE)

    asyncio.run(main())


def test_async_does_not_block_the_loop_and_runs_concurrently():
    async def main():
        aclient = ingle.AsyncOpenAI()
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        start = time.monotonic()
        answers = await asyncio.gather(
            *[
                aclient.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=10, temperature=0)
                for _ in range(3)
            ]
        )
        elapsed = time.monotonic() - start
        task.cancel()
        assert all("Paris" in a.choices[0].message.content for a in answers)
        assert ticks > elapsed * 1000 * 0.3, (ticks, elapsed)

    asyncio.run(main())


def test_async_break_cancels():
    async def main():
        aclient = ingle.AsyncOpenAI()
        before = (await aclient.metrics(MODEL))["cancelled_requests"]
        stream = await aclient.chat.completions.create(
            model=MODEL, **LONG, max_tokens=500, stream=True
        )
        i = 0
        async for _ in stream:
            i += 1
            if i == 3:
                break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # lets the loop finalize the abandoned iterator
            metrics = await aclient.metrics(MODEL)
            if metrics["active_requests"] == 0:
                break
        assert metrics["active_requests"] == 0
        assert metrics["cancelled_requests"] == before + 1

    asyncio.run(main())


def test_keyboard_interrupt_stops_a_whole_create(client, sigint_raises):
    before = wait_idle(client)["cancelled_requests"]
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        client.chat.completions.create(model=MODEL, **LONG, max_tokens=1000)
    timer.join()
    assert time.monotonic() - start < 3  # 1000 tokens would take ~10 s
    assert wait_idle(client)["cancelled_requests"] == before + 1


def test_cancelling_an_async_create_stops_generation():
    async def main():
        aclient = ingle.AsyncOpenAI()
        before = (await aclient.metrics(MODEL))["cancelled_requests"]
        task = asyncio.create_task(
            aclient.chat.completions.create(model=MODEL, **LONG, max_tokens=1000)
        )
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 3  # 1000 tokens would take ~10 s
        while time.monotonic() < deadline:
            metrics = await aclient.metrics(MODEL)
            if metrics["active_requests"] == 0:
                break
            await asyncio.sleep(0.01)
        assert metrics["active_requests"] == 0 and metrics["cancelled_requests"] == before + 1

    asyncio.run(main())
