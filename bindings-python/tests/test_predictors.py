"""Predictors written in Python, served through the OpenAI methods, `predictions` and
`ingle.serve` exactly like the built-in models."""

import asyncio
import enum
import gc
import io
import json
import sys
import threading
import time
import wave
from typing import Annotated, AsyncIterator, Dict, Iterator, List, Literal, Optional, Tuple

import numpy as np
import openai
import pytest

import ingle
from ingle import Parameter, PredictorDefinitionError, predictor
from ingle.types import ChatCompletionChunk, ChatCompletionMessageParam

from conftest import MODEL

RATE = 24_000


# --- The predictors under test ----------------------------------------------------------

finally_ran = threading.Event()


@predictor(tag="@test/echo")
def echo(
    messages: list[ChatCompletionMessageParam],
    temperature: Annotated[float, Parameter.Temperature("Ignored.", min=0, max=2)] = 1.0,
) -> Iterator[str]:
    """Echoes the last message word by word."""
    print("echoing", len(messages), "messages")
    try:
        for word in messages[-1]["content"].split():
            yield word + " "
    finally:
        finally_ran.set()


@predictor(tag="@test/chunks")
def chunks(messages: list[ChatCompletionMessageParam]) -> Iterator[ChatCompletionChunk]:
    """Yields ChatCompletionChunk objects, the last with a finish reason and usage."""
    words = messages[-1]["content"].split()
    for i, word in enumerate(words):
        yield ChatCompletionChunk(
            id="x", object="chat.completion.chunk", created=0, model="m",
            choices=[{"index": 0, "delta": {"content": word}, "finish_reason": None}],
        )
    yield ChatCompletionChunk(
        id="x", object="chat.completion.chunk", created=0, model="m",
        choices=[{"index": 0, "delta": {}, "finish_reason": "length"}],
        usage={"prompt_tokens": 7, "completion_tokens": len(words), "total_tokens": 7 + len(words)},
    )


def hashed_embedding(text: str, dims: int) -> np.ndarray:
    """A deterministic unit vector per text."""
    rng = np.random.default_rng(sum(text.encode()))
    v = rng.standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


@predictor(tag="@test/embed")
def embed(
    texts: Annotated[list[str], Parameter.Embedding("Texts.")],
    dims: Annotated[int, Parameter.EmbeddingDims("Dimensions.", min=1, max=16)] = 16,
) -> Annotated[np.ndarray, Parameter.Embedding("float32 (N, D).")]:
    return np.stack([hashed_embedding(t, 16)[:dims] for t in texts])


class Voice(enum.Enum):
    LOW = "low"
    HIGH = "high"


FREQUENCY = {Voice.LOW: 220.0, Voice.HIGH: 880.0}


@predictor(tag="@test/tone")
def tone(
    # The voice first and oddly named: the OpenAI layer finds it by its annotation.
    v: Annotated[Voice, Parameter.AudioVoice("The voice.")],
    words: Annotated[str, Parameter.Generic("Text to speak.")],
    pace: Annotated[float, Parameter.AudioSpeed("Speed.", min=0.25, max=4.0)] = 1.0,
) -> Iterator[Annotated[np.ndarray, Parameter.Audio("A sine wave per word.", sample_rate=RATE)]]:
    """A 0.25 s sine wave per word, at the voice's frequency, shorter when faster."""
    assert isinstance(v, Voice)
    n = int(RATE * 0.25 / pace)
    t = np.arange(n) / RATE
    for _ in words.split():
        yield (0.5 * np.sin(2 * np.pi * FREQUENCY[v] * t)).astype(np.float32)


heard: Dict[str, int] = {}


@predictor(tag="@test/listen")
def listen(
    audio: Annotated[np.ndarray, Parameter.Audio("Speech at 8 kHz.", sample_rate=8000)],
    language: Annotated[Optional[str], Parameter.TranscriptionLanguage("Language.")] = None,
) -> Iterator[str]:
    """Says how long the audio is and how loud, in two segments."""
    heard["samples"] = len(audio)
    heard["dtype"] = str(audio.dtype)
    yield f"{len(audio) / 8000:.2f} seconds"
    yield f" at peak {float(np.abs(audio).max()):.1f}"


tasks: List[str] = []


@predictor(tag="@test/interpret")
def interpret(
    speech: Annotated[np.ndarray, Parameter.Audio("Speech at 16 kHz.", sample_rate=16000)],
    job: Annotated[str, Parameter.TranscriptionTask("transcribe or translate.")] = "transcribe",
    language: Annotated[Optional[str], Parameter.TranscriptionLanguage("Language.")] = None,
) -> Iterator[Tuple[str, Annotated[Optional[dict], Parameter.TranscriptionSegment("The segment.")],
                    Annotated[str, Parameter.TranscriptionLanguage("The language heard.")]]]:
    """Hears French (unless told the language); says it in English when asked to translate."""
    tasks.append(job)
    text = " Hello." if job == "translate" else " Bonjour."
    segment = {"id": 0, "seek": 0, "start": 0.0, "end": len(speech) / 16000, "text": text,
               "tokens": [1], "temperature": 0.0, "avg_logprob": -0.5,
               "compression_ratio": 1.0, "no_speech_prob": 0.0}
    yield text, segment, language or "fr"


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return buffer.getvalue()


def read_wav(data: bytes) -> Tuple[np.ndarray, int]:
    with wave.open(io.BytesIO(data)) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return pcm.astype(np.float32) / 32768, w.getframerate()


def dominant_frequency(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.argmax(spectrum) * rate / len(samples))


@pytest.fixture(scope="module")
def users(client):
    """The session client, with this module's predictors registered once."""
    client.predictors.register(echo, chunks, embed, tone, listen, interpret, add, count, late,
                               async_add, async_count, wrong_shape, wrong_dtype, persona, fails,
                               shaped, stuck)
    return client


# --- Chat -----------------------------------------------------------------------------


def test_chat_predictor_whole_streamed_and_predictions(users):
    messages = [{"role": "user", "content": "hello big world"}]
    r = users.chat.completions.create(model="@test/echo", messages=messages)
    assert r.choices[0].message.content == "hello big world "
    assert r.choices[0].finish_reason == "stop"
    assert r.model == "@test/echo"
    deltas = [c.choices[0].delta.content for c in
              users.chat.completions.create(model="@test/echo", messages=messages, stream=True)
              if c.choices]
    assert deltas == ["", "hello ", "big ", "world ", None]
    p = users.predictions.create(tag="@test/echo", inputs={"messages": messages})
    assert p.error is None and p.results == ["hello big world ", None, None, None]  # text, finish reason, usage, thinking
    assert p.logs == "echoing 1 messages\n"
    parts = [q.results[0] for q in users.predictions.stream(tag="@test/echo", inputs={"messages": messages})]
    assert parts == ["hello ", "big ", "world "]
    # Its generation option is found by annotation; an unsupported one is refused by name.
    users.chat.completions.create(model="@test/echo", messages=messages, temperature=0.5)
    with pytest.raises(ingle.BadRequestError) as e:
        users.chat.completions.create(model="@test/echo", messages=messages, top_p=0.5)
    assert e.value.param == "top_p"
    with pytest.raises(ingle.BadRequestError) as e:
        users.chat.completions.create(model="@test/echo", messages=messages, temperature=3)
    assert e.value.param == "temperature"


def test_chat_predictor_yielding_chunks_gives_finish_reason_and_usage(users):
    messages = [{"role": "user", "content": "one two"}]
    r = users.chat.completions.create(model="@test/chunks", messages=messages)
    assert r.choices[0].message.content == "onetwo"
    assert r.choices[0].finish_reason == "length"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (7, 2, 9)
    stream = users.chat.completions.create(
        model="@test/chunks", messages=messages, stream=True, stream_options={"include_usage": True})
    last = list(stream)[-1]
    assert last.choices == [] and last.usage.completion_tokens == 2


def test_breaking_out_of_a_stream_runs_the_generators_finally_at_once(users):
    finally_ran.clear()
    stream = users.chat.completions.create(
        model="@test/echo", messages=[{"role": "user", "content": "a b c d e f"}], stream=True)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content == "b ":
            break
    stream.close()
    assert finally_ran.wait(1.0)
    finally_ran.clear()
    predictions = users.predictions.stream(tag="@test/echo", inputs={"messages": [{"role": "user", "content": "a b c"}]})
    next(iter(predictions))
    del predictions
    gc.collect()
    assert finally_ran.wait(1.0)


def test_a_predictor_calls_a_model_through_the_client(users):
    r = users.chat.completions.create(
        model="@test/persona", messages=[{"role": "user", "content": "Name the capital of France."}],
        max_tokens=12)
    assert "Paris" in r.choices[0].message.content
    text = "".join(c.choices[0].delta.content or "" for c in users.chat.completions.create(
        model="@test/persona", messages=[{"role": "user", "content": "Name the capital of France."}],
        max_tokens=12, stream=True) if c.choices)
    assert "Paris" in text


@predictor(tag="@test/persona")
def persona(
    messages: list[ChatCompletionMessageParam],
    max_tokens: Annotated[int, Parameter.MaxTokens("Most tokens.")] = 32,
) -> Iterator[ChatCompletionChunk]:
    """SmolLM2 with a persona: a system message, then the caller's messages."""
    client = _persona_client[0]
    system = {"role": "system", "content": "Be brief."}
    yield from client.chat.completions.create(
        model=MODEL, messages=[system, *messages], max_tokens=max_tokens, temperature=0, stream=True)


_persona_client: List[ingle.OpenAI] = []


@pytest.fixture(autouse=True, scope="module")
def _persona(client):
    _persona_client.append(client)


# --- Embeddings --------------------------------------------------------------------------


def test_embedding_predictor(users):
    r = users.embeddings.create(model="@test/embed", input=["alpha", "beta"])
    assert [d.index for d in r.data] == [0, 1]
    assert np.allclose(r.data[0].embedding, hashed_embedding("alpha", 16), atol=1e-6)
    r = users.embeddings.create(model="@test/embed", input="alpha", dimensions=4)
    assert np.allclose(r.data[0].embedding, hashed_embedding("alpha", 16)[:4], atol=1e-6)
    with pytest.raises(ingle.BadRequestError) as e:
        users.embeddings.create(model="@test/embed", input="alpha", dimensions=17)
    assert e.value.param == "dimensions"
    r = users.embeddings.create(model="@test/embed", input="alpha", encoding_format="base64")
    assert isinstance(r.data[0].embedding, str)
    p = users.predictions.create(tag="@test/embed", inputs={"texts": ["a", "b", "c"]})
    assert p.results[0]["dtype"] == "float32" and p.results[0]["shape"] == [3, 16]


# --- Speech ------------------------------------------------------------------------------


def test_speech_predictor_every_format_and_voice(users):
    r = users.audio.speech.create(model="@test/tone", voice="low", input="one two", response_format="wav")
    samples, rate = read_wav(r.content)
    assert rate == RATE and len(samples) == 2 * RATE // 4
    assert abs(dominant_frequency(samples, rate) - 220) < 5
    high, _ = read_wav(users.audio.speech.create(
        model="@test/tone", voice="high", input="one", response_format="wav").content)
    assert abs(dominant_frequency(high, RATE) - 880) < 5
    fast, _ = read_wav(users.audio.speech.create(
        model="@test/tone", voice="low", input="one two", response_format="wav", speed=2.0).content)
    assert len(fast) == len(samples) // 2
    # The built-in encoders serve it too.
    for fmt, magic in [("mp3", None), ("opus", b"OggS"), ("flac", b"fLaC"), ("aac", None)]:
        data = users.audio.speech.create(model="@test/tone", voice="low", input="a b", response_format=fmt).content
        assert len(data) > 100, fmt
        if magic:
            assert data.startswith(magic), fmt
    pcm = users.audio.speech.create(model="@test/tone", voice="low", input="a b", response_format="pcm").content
    assert len(pcm) == 2 * 2 * RATE // 4  # 24 kHz s16le
    # An OpenAI voice name is mapped to the first of its voices; others are refused by name.
    users.audio.speech.create(model="@test/tone", voice="alloy", input="a")
    with pytest.raises(ingle.BadRequestError) as e:
        users.audio.speech.create(model="@test/tone", voice="middle", input="a")
    assert e.value.param == "voice"


def test_speech_predictor_streamed(users):
    with users.audio.speech.with_streaming_response.create(
            model="@test/tone", voice="high", input="a b c", response_format="pcm") as response:
        parts = list(response.iter_bytes())
    assert sum(len(p) for p in parts) == 3 * 2 * RATE // 4
    sse = users.audio.speech.create(model="@test/tone", voice="high", input="a b", stream_format="sse")
    events = [json.loads(line[6:]) for line in sse.content.decode().splitlines() if line.startswith("data: ")]
    assert {e["type"] for e in events[:-1]} == {"speech.audio.delta"} and len(events) >= 3
    assert events[-1]["type"] == "speech.audio.done"
    p = users.predictions.create(tag="@test/tone", inputs={"v": "low", "words": "a b c"})
    assert p.results[0]["sample_rate"] == RATE
    assert len(p.results[0]["data"]) > 4 * 3 * RATE // 4  # base64 of the joined float32 samples


# --- Transcription -----------------------------------------------------------------------


def test_transcription_predictor_gets_samples_at_its_rate(users):
    t = np.arange(16000 * 2) / 16000
    wav = wav_bytes(0.5 * np.sin(2 * np.pi * 300 * t), 16000)
    r = users.audio.transcriptions.create(model="@test/listen", file=("two.wav", wav))
    assert r.text == "2.00 seconds at peak 0.5"
    assert heard == {"samples": 16000, "dtype": "float32"}
    events = list(users.audio.transcriptions.create(model="@test/listen", file=("two.wav", wav), stream=True))
    assert [e.type for e in events] == ["transcript.text.delta", "transcript.text.delta", "transcript.text.done"]
    assert events[-1].text == "2.00 seconds at peak 0.5"
    assert users.audio.transcriptions.create(
        model="@test/listen", file=("two.wav", wav), response_format="text").strip() == r.text
    # Samples at another rate are resampled to its 8 kHz.
    r = users.audio.transcriptions.create(
        model="@test/listen", file=np.zeros(44100, dtype=np.float32), sample_rate=44100)
    assert r.text.startswith("1.00 seconds")
    # It gives no segments, so no verbose_json.
    with pytest.raises(ingle.BadRequestError) as e:
        users.audio.transcriptions.create(model="@test/listen", file=("two.wav", wav),
                                          response_format="verbose_json")
    assert e.value.param == "response_format"
    p = users.predictions.create(tag="@test/listen", inputs={"audio": ingle.AudioSamples(
        np.zeros(4000, dtype=np.float32), 8000)})
    assert p.results[0] == "0.50 seconds at peak 0.0"
    # Audio at another rate, in stereo, is made mono at its declared rate, as for transcriptions.
    stereo = np.zeros((16000, 2), dtype=np.float32)
    p = users.predictions.create(tag="@test/listen", inputs={"audio": ingle.AudioSamples(stereo, 16000)})
    assert p.results[0] == "1.00 seconds at peak 0.0"
    with pytest.raises(ingle.BadRequestError) as e:
        users.predictions.create(tag="@test/listen", inputs={"audio": ingle.AudioSamples(np.zeros(4), 8000)})
    assert e.value.param == "audio"  # float64


def test_a_transcription_task_input_serves_translations(users):
    silence = dict(file=np.zeros(16000, dtype=np.float32), sample_rate=16000)
    tasks.clear()
    r = users.audio.transcriptions.create(model="@test/interpret", response_format="verbose_json",
                                          **silence)
    # The language it reports (an output annotated TranscriptionLanguage), by its English name.
    assert (r.task, r.language, r.text) == ("transcribe", "french", "Bonjour.")
    assert r.segments[0].end == 1.0
    told = users.audio.transcriptions.create(model="@test/interpret", language="de",
                                             response_format="verbose_json", **silence)
    assert told.language == "german"
    # audio.translations gives its TranscriptionTask input `translate`.
    t = users.audio.translations.create(model="@test/interpret", **silence)
    assert isinstance(t, ingle.types.Translation) and t.to_dict() == {"text": "Hello."}
    v = users.audio.translations.create(model="@test/interpret", response_format="verbose_json",
                                        **silence)
    assert isinstance(v, ingle.types.TranslationVerbose)
    assert (v.task, v.language, v.text) == ("translate", "english", "Hello.")
    assert users.audio.translations.create(model="@test/interpret", response_format="srt",
                                           **silence) == "1\n00:00:00,000 --> 00:00:01,000\nHello.\n\n"
    assert tasks == ["transcribe", "transcribe", "translate", "translate", "translate"]
    # Without a TranscriptionTask input: transcriptions only.
    with pytest.raises(ingle.BadRequestError) as e:
        users.audio.translations.create(model="@test/listen", **silence)
    assert e.value.param == "model" and "TranscriptionTask" in e.value.message

    # The task is a string input: an int, or the annotation on an output, is refused.
    def task_int(audio: Annotated[np.ndarray, Parameter.Audio(sample_rate=16000)],
                 job: Annotated[int, Parameter.TranscriptionTask()] = 0) -> str:
        return ""

    assert definition_error(task_int).param == "job"

    def task_out(audio: Annotated[np.ndarray, Parameter.Audio(sample_rate=16000)]
                 ) -> Tuple[str, Annotated[str, Parameter.TranscriptionTask()]]:
        return "", ""

    assert definition_error(task_out).param == "output_1"


# --- Eager and generator, create and stream -----------------------------------------------


@predictor(tag="@test/add")
def add(a: int, b: Annotated[int, Parameter.Numeric("At most 100.", min=0, max=100)] = 1) -> int:
    return a + b


@predictor(tag="@test/count")
def count(n: int) -> Iterator[Annotated[int, Parameter.Generic("The count so far.")]]:
    for i in range(1, n + 1):
        yield i


@predictor(tag="@test/async-add")
async def async_add(a: int, b: int = 1) -> int:
    await asyncio.sleep(0.01)
    return a + b


@predictor(tag="@test/async-count")
async def async_count(n: int) -> AsyncIterator[int]:
    for i in range(1, n + 1):
        await asyncio.sleep(0.001)
        yield i


@predictor(tag="@test/late")
def late(seconds: float) -> Tuple[str, float]:
    """Sleeps, then says so: two outputs."""
    time.sleep(seconds)
    return "slept", seconds


def test_the_four_cases_of_create_and_stream(users):
    # Eager + create: the value. Eager + stream: one prediction with it.
    assert users.predictions.create(tag="@test/add", inputs={"a": 2}).results == [3]
    assert [p.results for p in users.predictions.stream(tag="@test/add", inputs={"a": 2, "b": 5})] == [[7]]
    # Generator + stream: every partial value. Generator + create: the last one.
    assert [p.results for p in users.predictions.stream(tag="@test/count", inputs={"n": 3})] == [[1], [2], [3]]
    assert users.predictions.create(tag="@test/count", inputs={"n": 3}).results == [3]
    # The same four with async functions.
    assert users.predictions.create(tag="@test/async-add", inputs={"a": 2}).results == [3]
    assert [p.results for p in users.predictions.stream(tag="@test/async-add", inputs={"a": 1})] == [[2]]
    assert [p.results for p in users.predictions.stream(tag="@test/async-count", inputs={"n": 3})] == [[1], [2], [3]]
    assert users.predictions.create(tag="@test/async-count", inputs={"n": 4}).results == [4]
    assert users.predictions.create(tag="@test/late", inputs={"seconds": 0}).results == ["slept", 0.0]


def test_inputs_are_checked_against_the_signature(users):
    for inputs, param in [({}, "a"), ({"a": "x"}, "a"), ({"a": 1, "b": 101}, "b"), ({"a": 1, "c": 1}, "c")]:
        with pytest.raises(ingle.BadRequestError) as e:
            users.predictions.create(tag="@test/add", inputs=inputs)
        assert e.value.param == param, inputs


def test_async_predictors_run_from_inside_an_event_loop(users):
    async def main():
        # A sync call inside a running loop: the predictor's own loop runs in a helper thread.
        assert users.predictions.create(tag="@test/async-add", inputs={"a": 40, "b": 2}).results == [42]
        stream = users.predictions.stream(tag="@test/async-count", inputs={"n": 2})
        assert [p.results for p in stream] == [[1], [2]]

    asyncio.run(main())


def test_async_client_serves_python_predictors(users):
    async def main():
        client = ingle.AsyncOpenAI()
        client.predictors.register(echo_again)
        r = await client.chat.completions.create(model="@test/echo-again", messages=[{"role": "user", "content": "x y"}])
        assert r.choices[0].message.content == "x y "
        stream = await client.chat.completions.create(
            model="@test/echo-again", messages=[{"role": "user", "content": "x y"}], stream=True)
        assert [c.choices[0].delta.content async for c in stream if c.choices][1:3] == ["x ", "y "]

    asyncio.run(main())


@predictor(tag="@test/echo-again")
async def echo_again(messages: list[ChatCompletionMessageParam]) -> AsyncIterator[str]:
    for word in messages[-1]["content"].split():
        await asyncio.sleep(0)
        yield word + " "


def test_other_threads_run_while_a_predictor_runs(users):
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        users.predictions.create(tag="@test/late", inputs={"seconds": 0.5})
    finally:
        stop.set()
        thread.join()
    assert len(ticks) >= 20, len(ticks)
    # Predictors called from several threads at once.
    results = []

    def call(i):
        results.append(users.predictions.create(tag="@test/add", inputs={"a": i}).results[0])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(1, 9))


# --- Failures ----------------------------------------------------------------------------


@predictor(tag="@test/fails")
def fails(after: int) -> Iterator[int]:
    yield 1
    if after:
        print("about to fail")
        raise ValueError(f"failed after {after}")


stuck_finally = threading.Event()


@predictor(tag="@test/stuck")
def stuck(n: int) -> Iterator[int]:
    """Yields once, then never again (a loop of short sleeps), or never returns (n = 0)."""
    try:
        if n:
            yield 1
        while True:
            time.sleep(0.05)
    finally:
        stuck_finally.set()


@predictor(tag="@test/async-stuck")
async def async_stuck(n: int) -> AsyncIterator[int]:
    try:
        yield 1
        await asyncio.sleep(3600)
    finally:
        stuck_finally.set()


def test_closing_a_stream_stops_a_predictor_stuck_in_its_own_code(users):
    """close() returned, but the worker ran the predictor forever."""
    stuck_finally.clear()
    stream = users.predictions.stream(tag="@test/stuck", inputs={"n": 1})
    items = iter(stream)
    assert next(items).results == [1]
    waiting = threading.Thread(target=lambda: list(items), daemon=True)
    waiting.start()
    time.sleep(0.2)
    stream.close()
    waiting.join(5)
    assert not waiting.is_alive() and stuck_finally.is_set()
    assert users.predictions.create(tag="@test/add", inputs={"a": 1}).results == [2]


@pytest.mark.parametrize("tag", ["@test/stuck", "@test/async-stuck"])
def test_asyncio_run_returns_after_breaking_out_of_a_stuck_predictor(users, tag):
    """asyncio.run() waited forever for the worker thread that ran the predictor."""
    # Also: a close that comes before a step starts stops it (the call is marked cancelled).
    async def main() -> None:
        aclient = ingle.AsyncOpenAI()
        aclient.predictors.register(stuck, async_stuck)
        stream = await aclient.predictions.stream(tag=tag, inputs={"n": 1})
        assert (await stream.__anext__()).results == [1]
        # The next step is under way in a worker thread, stuck in the predictor, when the
        # stream closes (as `async for ... break` does while another task awaits it).
        pending = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.3)
        await stream.close()
        stopped = await asyncio.wait_for(pending, 5)
        assert stopped.results is None and stopped.error["type"] == "cancelled", stopped.error
        assert "was stopped: its caller went away" in stopped.error["message"]

    stuck_finally.clear()
    finished = threading.Event()
    runner = threading.Thread(target=lambda: (asyncio.run(main()), finished.set()), daemon=True)
    runner.start()
    assert finished.wait(10)
    assert stuck_finally.wait(5)


def test_a_cancelled_create_stops_a_predictor_that_never_returns(users):
    async def main() -> None:
        aclient = ingle.AsyncOpenAI()
        aclient.predictors.register(stuck)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(aclient.predictions.create(tag="@test/stuck", inputs={"n": 0}), 0.3)

    stuck_finally.clear()
    finished = threading.Event()
    runner = threading.Thread(target=lambda: (asyncio.run(main()), finished.set()), daemon=True)
    runner.start()
    assert finished.wait(10)
    assert stuck_finally.wait(5)


@predictor(tag="@test/nested-failure")
def nested_failure(depth: int) -> int:
    if depth == 0:
        raise ValueError("the root cause")
    p = _persona_client[0].predictions.create(tag="@test/nested-failure", inputs={"depth": depth - 1})
    if p.error:
        raise RuntimeError(p.error["message"])
    return p.results[0]


def test_a_failure_60_calls_deep_keeps_its_cause(users):
    """Each level wraps the message of the one below: 3.5 KB, bounded to 2 KB by cutting the end, the cause."""
    users.predictors.register(nested_failure)
    p = users.predictions.create(tag="@test/nested-failure", inputs={"depth": 60})
    message = p.error["message"]
    assert len(message.encode()) <= 2048
    assert message.startswith("The predictor `@test/nested-failure` raised RuntimeError: ")
    assert message.endswith("raised ValueError: the root cause"), message[-200:]


@predictor(tag="@test/exits")
def exits(code: int) -> int:
    sys.exit(code)


def test_sys_exit_in_a_predictor_fails_its_prediction_and_says_so(users):
    users.predictors.register(exits)
    p = users.predictions.create(tag="@test/exits", inputs={"code": 3})
    assert p.error["message"] == ("The predictor `@test/exits` raised SystemExit(3) (it called "
                                  "sys.exit); the prediction failed and the process goes on")
    assert users.predictions.create(tag="@test/add", inputs={"a": 1}).results == [2]


@predictor(tag="@test/wrong-shape")
def wrong_shape(texts: Annotated[list[str], Parameter.Embedding()]) -> Annotated[np.ndarray, Parameter.Embedding()]:
    return np.zeros((len(texts) + 1, 4), dtype=np.float32)


@predictor(tag="@test/wrong-dtype")
def wrong_dtype(
    text: str, voice: Annotated[Literal["a"], Parameter.AudioVoice()],
) -> Annotated[np.ndarray, Parameter.Audio(sample_rate=RATE)]:
    return np.zeros(100)  # float64


def test_an_exception_fails_the_prediction_with_its_traceback_in_logs(users):
    p = users.predictions.create(tag="@test/fails", inputs={"after": 1})
    assert p.results is None
    assert p.error["type"] == "server_error"
    assert "ValueError: failed after 1" in p.error["message"] and "@test/fails" in p.error["message"]
    assert p.logs.startswith("about to fail\nTraceback (most recent call last):")
    assert "raise ValueError" in p.logs
    streamed = list(users.predictions.stream(tag="@test/fails", inputs={"after": 2}))
    assert streamed[0].results == [1] and streamed[-1].error is not None
    assert "Traceback" in streamed[-1].logs
    with pytest.raises(ingle.InternalServerError) as e:
        users.chat.completions.create(model="@test/persona", messages=[{"role": "user", "content": "x"}],
                                      max_tokens=0)
    assert "@test/persona" in str(e.value)
    # The client is fine afterwards.
    assert users.predictions.create(tag="@test/fails", inputs={"after": 0}).results == [1]


@predictor(tag="@test/not-a-tuple")
def not_a_tuple(x: int) -> Tuple[int, int]:
    return x  # type: ignore[return-value]


def test_outputs_that_break_the_signature_fail_clearly(users):
    users.predictors.register(not_a_tuple)
    p = users.predictions.create(tag="@test/not-a-tuple", inputs={"x": 5})
    assert "`@test/not-a-tuple`" in p.error["message"] and "declares a tuple of 2 outputs" in p.error["message"]
    with pytest.raises(ingle.InternalServerError) as e:
        users.embeddings.create(model="@test/wrong-shape", input=["a", "b"])
    assert "@test/wrong-shape" in str(e.value) and "3 embeddings for 2 texts" in str(e.value)
    with pytest.raises(ingle.InternalServerError) as e:
        users.audio.speech.create(model="@test/wrong-dtype", voice="a", input="x")
    assert "@test/wrong-dtype" in str(e.value) and "float64" in str(e.value)
    assert users.predictions.create(tag="@test/add", inputs={"a": 1}).results == [2]


@predictor(tag="@test/shaped")
def shaped(kind: str) -> dict:
    if kind == "nan":
        return {"x": [1.0, float("nan")]}
    if kind == "inf":
        return {"x": float("-inf")}
    if kind == "cycle":
        cyclic: dict = {}
        cyclic["self"] = cyclic
        return cyclic
    if kind == "deep":
        deep: list = []
        for _ in range(10_000):
            deep = [deep]
        return {"v": deep}
    return {"ok": [1, 2.5]}


@pytest.mark.parametrize("kind, message", [
    ("nan", 'NaN, which JSON cannot carry (NaN and infinity are not JSON numbers), in `'),
    ("inf", '-inf, which JSON cannot carry'),
    ("cycle", "nests lists and dicts more than 128 deep, or contains itself"),
    ("deep", "nests lists and dicts more than 128 deep, or contains itself"),
])
def test_outputs_json_cannot_carry_fail_the_prediction(users, kind, message):
    """A cycle or 10,000 levels crashed the process (the conversion recursed without bound);
    NaN became ``None``."""
    p = users.predictions.create(tag="@test/shaped", inputs={"kind": kind})
    assert p.results is None
    assert "`@test/shaped`" in p.error["message"] and message in p.error["message"], p.error
    assert users.predictions.create(tag="@test/shaped", inputs={"kind": "ok"}).results == [{"ok": [1, 2.5]}]


def definition_error(function, tag="@test/bad"):
    with pytest.raises(PredictorDefinitionError) as e:
        predictor(tag=tag)(function)
    return e.value


def test_registration_rules_name_the_function_and_parameter():
    # Chat: one required messages parameter, text or chunks out.
    def two_required(messages: list[ChatCompletionMessageParam], style: str) -> Iterator[str]:
        yield ""

    e = definition_error(two_required)
    assert e.function.endswith("two_required") and e.param == "style" and "two_required" in str(e)

    def optional_messages(messages: Optional[list[ChatCompletionMessageParam]] = None) -> Iterator[str]:
        yield ""

    assert definition_error(optional_messages).param == "messages"

    def chat_to_int(messages: list[ChatCompletionMessageParam]) -> int:
        return 0

    assert "str or ChatCompletionChunk" in str(definition_error(chat_to_int))

    # Embeddings: exactly one required parameter; EmbeddingDims with a default; float32 (N, D) out.
    def two_texts(a: Annotated[list[str], Parameter.Embedding()], b: str) -> Annotated[np.ndarray, Parameter.Embedding()]:
        return np.zeros((1, 1), np.float32)

    assert definition_error(two_texts).param == "b"

    def dims_without_default(
        texts: Annotated[list[str], Parameter.Embedding()],
        dims: Annotated[int, Parameter.EmbeddingDims(max=8)],
    ) -> Annotated[np.ndarray, Parameter.Embedding()]:
        return np.zeros((1, 1), np.float32)

    assert definition_error(dims_without_default).param == "dims"

    def embeds_nothing(texts: Annotated[list[str], Parameter.Embedding()]) -> int:
        return 0

    assert definition_error(embeds_nothing).param == "outputs"

    # Speech: a text and a required voice; a speed with a default; audio out.
    def voice_default(
        text: str, voice: Annotated[Literal["a"], Parameter.AudioVoice()] = "a",
    ) -> Annotated[np.ndarray, Parameter.Audio(sample_rate=RATE)]:
        return np.zeros(1, np.float32)

    assert definition_error(voice_default).param == "voice"

    def speed_required(
        text: str, voice: Annotated[Literal["a"], Parameter.AudioVoice()],
        speed: Annotated[float, Parameter.AudioSpeed()],
    ) -> Annotated[np.ndarray, Parameter.Audio(sample_rate=RATE)]:
        return np.zeros(1, np.float32)

    assert definition_error(speed_required).param == "speed"

    def no_text(voice: Annotated[Literal["a"], Parameter.AudioVoice()]) -> Annotated[np.ndarray, Parameter.Audio(sample_rate=RATE)]:
        return np.zeros(1, np.float32)

    assert "text to speak" in str(definition_error(no_text))

    def voices_unknown(text: str, voice: Annotated[str, Parameter.AudioVoice()]) -> Annotated[np.ndarray, Parameter.Audio(sample_rate=RATE)]:
        return np.zeros(1, np.float32)

    assert "voices" in str(definition_error(voices_unknown))

    def speech_no_audio(text: str, voice: Annotated[Literal["a"], Parameter.AudioVoice()]) -> str:
        return ""

    assert definition_error(speech_no_audio).param == "outputs"

    # Transcription: audio in, text out.
    def transcribes_to_int(audio: Annotated[np.ndarray, Parameter.Audio(sample_rate=16000)]) -> int:
        return 0

    assert definition_error(transcribes_to_int).param == "outputs"

    def audio_not_array(audio: Annotated[bytes, Parameter.Audio(sample_rate=16000)]) -> str:
        return ""

    assert definition_error(audio_not_array).param == "audio"

    # Types and hints.
    def no_hint(x) -> int:
        return 0

    assert definition_error(no_hint).param == "x"

    def no_return(x: int):
        return 0

    assert "return" in str(definition_error(no_return))

    def odd_type(x: complex) -> int:
        return 0

    assert definition_error(odd_type).param == "x"

    def varargs(*x: int) -> int:
        return 0

    assert definition_error(varargs).param == "x"

    def temperature_as_text(messages: list[ChatCompletionMessageParam],
                            t: Annotated[str, Parameter.Temperature()] = "hot") -> Iterator[str]:
        yield ""

    assert definition_error(temperature_as_text).param == "t"

    def bad_default(x: Annotated[int, Parameter.Numeric(min=0, max=3)] = 5) -> int:
        return x

    assert definition_error(bad_default).param == "inputs[0].default"

    def yields_without_iterator(x: int) -> int:
        yield x

    assert "Iterator" in str(definition_error(yields_without_iterator))

    assert "tag" in str(definition_error(add.function, tag="has space"))


def test_registering_a_tag_twice_or_a_non_predictor_is_refused(users):
    with pytest.raises(PredictorDefinitionError) as e:
        users.predictors.register(predictor(tag="@test/add")(lambda a: a))
    with pytest.raises(PredictorDefinitionError) as e:
        users.predictors.register(add)
    assert "already registered" in str(e.value)
    with pytest.raises(TypeError):
        users.predictors.register(lambda: 0)
    assert "@test/add" in [m.id for m in users.models.list().data]


# --- Over HTTP ---------------------------------------------------------------------------


def test_ingle_serve_serves_python_predictors_to_the_openai_sdk(users):
    with ingle.start_server(users, port=0, api_key="secret") as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="secret", max_retries=0)
        r = sdk.chat.completions.create(model="@test/echo", messages=[{"role": "user", "content": "over the wire"}])
        assert r.choices[0].message.content == "over the wire "
        stream = sdk.chat.completions.create(model="@test/echo", messages=[{"role": "user", "content": "a b"}], stream=True)
        assert [c.choices[0].delta.content for c in stream if c.choices][1:3] == ["a ", "b "]
        e = sdk.embeddings.create(model="@test/embed", input=["alpha"])
        assert np.allclose(e.data[0].embedding, hashed_embedding("alpha", 16), atol=1e-6)
        speech = sdk.audio.speech.create(model="@test/tone", voice="high", input="one", response_format="wav")
        samples, rate = read_wav(speech.content)
        assert abs(dominant_frequency(samples, rate) - 880) < 5
        t = sdk.audio.transcriptions.create(model="@test/listen", file=("x.wav", wav_bytes(np.zeros(8000), 16000)))
        assert t.text.startswith("0.50 seconds")
        # A Python predictor that calls the model, from a server thread.
        r = sdk.chat.completions.create(model="@test/persona", messages=[{"role": "user", "content": "Name the capital of France."}], max_tokens=12)
        assert "Paris" in r.choices[0].message.content
        with pytest.raises(openai.InternalServerError):
            sdk.chat.completions.create(model="@test/persona", messages=[{"role": "user", "content": "x"}], max_tokens=0)
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=server.url, api_key="wrong", max_retries=0).models.list()
        assert "@test/echo" in [m.id for m in sdk.models.list().data]


stuck_chat_finally = threading.Event()


@predictor(tag="@test/stuck-chat")
def stuck_chat(messages: list[ChatCompletionMessageParam]) -> Iterator[str]:
    """Says one word, then thinks forever in its own code (a loop of short sleeps)."""
    try:
        yield "thinking"
        while True:
            time.sleep(0.05)
    finally:
        stuck_chat_finally.set()


def test_ingle_serve_interrupts_a_stuck_predictor_when_its_http_client_leaves(users):
    """The server saw a client leave only at the next output, which never came: the predictor
    ran forever on a server thread (and a drain waited for it)."""
    users.predictors.register(stuck_chat)
    ask = [{"role": "user", "content": "think"}]
    with ingle.start_server(users, port=0, api_key="secret") as server:
        # A whole answer: the client gives up waiting.
        stuck_chat_finally.clear()
        impatient = openai.OpenAI(base_url=server.url, api_key="secret", max_retries=0, timeout=0.5)
        with pytest.raises(openai.APITimeoutError):
            impatient.chat.completions.create(model="@test/stuck-chat", messages=ask)
        assert stuck_chat_finally.wait(5), "the predictor still runs after its client left"
        # A stream: the client reads the first word, then closes the connection.
        stuck_chat_finally.clear()
        sdk = openai.OpenAI(base_url=server.url, api_key="secret", max_retries=0)
        stream = sdk.chat.completions.create(model="@test/stuck-chat", messages=ask, stream=True)
        contents = (c.choices[0].delta.content for c in stream if c.choices)
        assert "thinking" in [next(contents), next(contents)]
        stream.close()
        assert stuck_chat_finally.wait(5), "the predictor still runs after its client left"
        # The server goes on.
        r = sdk.chat.completions.create(model="@test/echo", messages=[{"role": "user", "content": "still here"}])
        assert r.choices[0].message.content == "still here "


def test_ingle_serve_refuses_web_pages_and_rebound_names_as_the_cli_does(users):
    import urllib.error
    import urllib.request

    def get(url, headers):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    with pytest.raises(ValueError, match="api_key is empty"):
        ingle.start_server(users, port=0, api_key="")
    with pytest.raises(ValueError, match="cors_origins: `app.example.com` is not an origin"):
        ingle.start_server(users, port=0, cors_origins=["app.example.com"])
    with pytest.raises(ValueError, match="allowed_hosts"):
        ingle.start_server(users, port=0, allowed_hosts=["https://x.example"])
    with ingle.start_server(users, port=0, allowed_hosts=["models.example.com"],
                            cors_origins="https://app.example.com") as server:
        models = server.url + "/models"
        status, _, body = get(models, {"Host": "evil.example"})
        assert status == 403 and json.loads(body)["error"]["code"] == "host_not_allowed"
        assert get(models, {"Host": "models.example.com"})[0] == 200
        status, _, body = get(models, {"Origin": "https://evil.example"})
        assert status == 403 and json.loads(body)["error"]["code"] == "origin_not_allowed"
        status, headers, _ = get(models, {"Origin": "https://app.example.com"})
        assert status == 200 and headers["access-control-allow-origin"] == "https://app.example.com"
        # A keyless server's predictors are still served to programs on this machine.
        sdk = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)
        r = sdk.chat.completions.create(model="@test/echo", messages=[{"role": "user", "content": "still here"}])
        assert r.choices[0].message.content == "still here "


def test_the_example_runs(tmp_path):
    import pathlib
    import subprocess
    import sys

    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "predictor.py"
    run = subprocess.run([sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == f"tone.wav: {44 + 3 * 2 * 4800} bytes"
    assert len(run.stdout.splitlines()[0]) > 5  # the pirate said something


def test_serve_async_runs_until_cancelled(users):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def main():
        task = asyncio.create_task(ingle.serve_async(users, port=port))
        sdk = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
        for _ in range(100):
            try:
                r = await sdk.chat.completions.create(model="@test/echo", messages=[{"role": "user", "content": "async http"}])
                break
            except openai.APIConnectionError:
                await asyncio.sleep(0.05)
        assert r.choices[0].message.content == "async http "
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(openai.APIConnectionError):
            await sdk.models.list()

    asyncio.run(main())


def test_llama_cpp_sampling_extensions_reach_a_predictor_by_annotation(users):
    """`top_k`, `min_p`, `repetition_penalty` (or `repeat_penalty`) and `chat_template_kwargs`,
    sent through `extra_body` as users of local models do, arrive by annotation."""
    seen = {}

    @predictor(tag="@test/sampling-extensions")
    def sampled(
        messages: list[ChatCompletionMessageParam],
        k: Annotated[int, Parameter.TopK("k.")] = 0,
        p: Annotated[float, Parameter.MinP("p.")] = 0.0,
        penalty: Annotated[float, Parameter.RepetitionPenalty("r.")] = 1.0,
        kwargs: Annotated[dict, Parameter.ChatTemplateKwargs("t.")] = {},
    ) -> Iterator[str]:
        seen.update(k=k, p=p, penalty=penalty, kwargs=kwargs)
        yield "ok"

    users.predictors.register(sampled)
    messages = [{"role": "user", "content": "hi"}]
    users.chat.completions.create(
        model="@test/sampling-extensions", messages=messages,
        extra_body={"top_k": 7, "min_p": 0.2, "repeat_penalty": 1.3,
                    "chat_template_kwargs": {"enable_thinking": False}})
    assert seen == {"k": 7, "p": 0.2, "penalty": 1.3, "kwargs": {"enable_thinking": False}}
    # The built-in model takes them too; out of range is refused naming the field.
    reply = users.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=4, seed=1,
        extra_body={"top_k": 5, "min_p": 0.1, "repetition_penalty": 1.1})
    assert reply.choices[0].message.content
    with pytest.raises(ingle.BadRequestError) as e:
        users.chat.completions.create(model=MODEL, messages=messages, extra_body={"min_p": 2})
    assert e.value.param == "min_p"
    # A predictor without the annotation refuses the option by name.
    with pytest.raises(ingle.BadRequestError) as e:
        users.chat.completions.create(model="@test/echo", messages=messages, extra_body={"top_k": 3})
    assert e.value.param == "top_k"
