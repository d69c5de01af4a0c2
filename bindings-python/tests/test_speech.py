"""``client.audio.speech`` on the default speech model (a Piper voice). The audio is decoded
with PyAV (FFmpeg's decoders: not ingle's code) and compared with the samples the model
produced (``to_numpy()``). Synthesis is not deterministic (the model samples noise), so
durations are compared within one response, never across two."""

import asyncio
import base64
import gc
import io
import json
import struct
import threading
import time

import av
import numpy as np
import openai
import pytest

import ingle

SPEECH = "@local/piper-en-us-joe-medium"
TWO = "Hello there. This is a test of the speech model."
PARAGRAPH = (
    "The old lighthouse stood at the edge of the cliff for more than a hundred years. "
    "Every night its lamp turned slowly, sweeping a beam of light across the dark water. "
    "Sailors far out at sea looked for it when the storms rolled in from the west. "
    "The keeper climbed the narrow stairs each evening with a can of oil and a lantern. "
    "When the new electric light arrived, he stayed on, because the sea had become his home."
)
CONTENT_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
# The rate FFmpeg decodes each format at: the model's (22050 Hz), but Ogg Opus, which always
# decodes at 48 kHz.
DECODED_RATE = {"mp3": 22050, "opus": 48000, "aac": 22050, "flac": 22050, "wav": 22050}
# Decoded duration against the model's: ADTS AAC has no gapless info, so the decoder also
# outputs the encoder's priming (1024 samples) and the last frame's padding (< 1024).
TOLERANCE_S = {"mp3": 0.03, "opus": 0.03, "aac": 0.15, "flac": 0.001, "wav": 0.001}


def decode(data):
    """``(sample_rate, channels, seconds, codec)`` of encoded audio, decoded by FFmpeg."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        samples, rates, channels = 0, set(), set()
        for frame in container.decode(stream):
            samples += frame.samples
            rates.add(frame.sample_rate)
            channels.add(frame.layout.nb_channels)
        assert len(rates) == 1 and len(channels) == 1, (rates, channels)
        rate = rates.pop()
        return rate, channels.pop(), samples / rate, stream.codec_context.name


def opus_head(data):
    """``(channels, input sample rate)`` from an Ogg Opus stream's identification header
    (RFC 7845: the rate of the audio before coding; decoders output 48 kHz)."""
    at = data.index(b"OpusHead")
    channels = data[at + 9]
    (input_rate,) = struct.unpack_from("<I", data, at + 12)
    return channels, input_rate


def seconds_of(response):
    samples = response.to_numpy()
    return len(samples) / response.sample_rate


def sse_events(text):
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


def wait_idle(client, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        metrics = client.metrics(SPEECH)
        if metrics["active_requests"] == 0:
            return metrics
        time.sleep(0.01)
    raise AssertionError(f"still busy: {client.metrics(SPEECH)}")


def still_works(client):
    r = client.audio.speech.create(model=SPEECH, voice="alloy", input="Still here.")
    assert r.content_type == "audio/mpeg" and len(r.to_numpy()) > 0


@pytest.mark.parametrize("response_format", ["mp3", "opus", "aac", "flac", "wav"])
def test_every_format_decodes_to_the_models_audio(client, response_format):
    r = client.audio.speech.create(
        model=SPEECH, voice="alloy", input=TWO, response_format=response_format
    )
    assert isinstance(r, ingle.HttpxBinaryResponseContent)
    assert r.content_type == CONTENT_TYPES[response_format]
    assert r.headers["Content-Type"] == r.content_type
    assert int(r.headers["content-length"]) == len(r.content)
    samples = r.to_numpy()
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert r.sample_rate == 22050 and r.channels == 1
    assert 1.0 < seconds_of(r) < 10.0
    assert 0.05 < float(np.abs(samples).max()) <= 1.5  # speech, not silence
    rate, channels, seconds, _ = decode(r.content)
    assert rate == DECODED_RATE[response_format] and channels == 1
    assert abs(seconds - seconds_of(r)) < TOLERANCE_S[response_format], (seconds, seconds_of(r))
    if response_format == "opus":
        # The stream's header gives the rate of the audio before Opus coding: the model's.
        assert opus_head(r.content) == (1, r.sample_rate)
    if response_format == "wav":
        # The whole-file form has exact sizes in its header (a stream's cannot).
        riff, data = struct.unpack_from("<I", r.content, 4)[0], r.content.find(b"data")
        assert riff == len(r.content) - 8
        assert struct.unpack_from("<I", r.content, data + 4)[0] == len(r.content) - data - 8


def test_pcm_is_raw_24khz_16bit_mono(client):
    r = client.audio.speech.create(model=SPEECH, voice="echo", input=TWO, response_format="pcm")
    assert r.content_type == "audio/pcm" and len(r.content) % 2 == 0
    pcm = np.frombuffer(r.content, dtype="<i2")
    assert abs(len(pcm) / 24000 - seconds_of(r)) < 0.01
    assert int(np.abs(pcm).max()) > 0.05 * 32767


def test_the_binary_response_has_openais_interface(client, tmp_path):
    # Every public member of openai's HttpxBinaryResponseContent but the httpx response.
    names = {n for n in dir(openai.HttpxBinaryResponseContent) if not n.startswith("_")}
    missing = names - {"response"} - set(dir(ingle.HttpxBinaryResponseContent))
    assert not missing
    r = client.audio.speech.create(
        model=SPEECH, voice="joe", input=TWO, response_format="wav", timeout=30, extra_headers={}
    )
    assert r.read() == r.content and r.content[:4] == b"RIFF"
    chunks = list(r.iter_bytes(1000))
    assert b"".join(chunks) == r.content and {len(c) for c in chunks[:-1]} == {1000}
    assert list(r.iter_bytes()) == [r.content]
    r.write_to_file(tmp_path / "a.wav")
    r.stream_to_file(str(tmp_path / "b.wav"), chunk_size=333)
    assert (tmp_path / "a.wav").read_bytes() == r.content == (tmp_path / "b.wav").read_bytes()
    assert decode((tmp_path / "a.wav").read_bytes())[:2] == (22050, 1)
    assert not r.to_numpy().flags.writeable  # a view of the engine's samples


def test_voices_and_speed(client):
    for voice in ["joe", "alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova",
                  "sage", "shimmer", "verse", "marin", "cedar"]:
        r = client.audio.speech.create(model=SPEECH, voice=voice, input="Hi.", response_format="pcm")
        assert len(r.content) > 0
    slow = client.audio.speech.create(model=SPEECH, voice="joe", input=TWO, speed=0.5)
    fast = client.audio.speech.create(model=SPEECH, voice="joe", input=TWO, speed=2)
    assert seconds_of(fast) < 0.6 * seconds_of(slow)


def test_streaming_yields_audio_as_it_is_synthesised(client):
    with client.audio.speech.with_streaming_response.create(
        model=SPEECH, voice="alloy", input=PARAGRAPH, response_format="pcm"
    ) as r:
        assert isinstance(r, ingle.StreamedBinaryAPIResponse)
        assert r.content_type == "audio/pcm" and r.headers["content-type"] == "audio/pcm"
        start = time.monotonic()
        arrivals, chunks = [], []
        for chunk in r.iter_bytes():
            arrivals.append(time.monotonic() - start)
            chunks.append(chunk)
        assert r.is_closed
    # A chunk per sentence (and the resampler's tail); the first long before the last.
    assert len(chunks) >= 5, [len(c) for c in chunks]
    assert arrivals[0] < 0.5 * arrivals[-1], arrivals
    seconds = len(b"".join(chunks)) / 2 / 24000
    assert 10 < seconds < 60


@pytest.mark.parametrize("response_format", ["mp3", "opus", "aac", "flac", "wav"])
def test_streamed_formats_decode(client, tmp_path, response_format):
    path = tmp_path / f"speech.{response_format}"
    with client.audio.speech.with_streaming_response.create(
        model=SPEECH, voice="nova", input=TWO, response_format=response_format
    ) as r:
        assert r.content_type == CONTENT_TYPES[response_format]
        r.stream_to_file(path)
    rate, channels, seconds, _ = decode(path.read_bytes())
    assert rate == DECODED_RATE[response_format] and channels == 1
    assert 1.0 < seconds < 10.0


def test_streamed_chunk_size_read_and_consumption(client):
    with client.audio.speech.with_streaming_response.create(
        model=SPEECH, voice="joe", input=TWO
    ) as r:
        chunks = list(r.iter_bytes(chunk_size=1000))
        assert {len(c) for c in chunks[:-1]} == {1000} and 0 < len(chunks[-1]) <= 1000
        with pytest.raises(ingle.StreamAlreadyConsumed):
            r.read()
    with client.audio.speech.with_streaming_response.create(
        model=SPEECH, voice="joe", input=TWO, response_format="flac"
    ) as r:
        content = r.read()
        assert r.parse() == content and b"".join(r.iter_bytes(7)) == content
    assert decode(content)[:2] == (22050, 1)
    with pytest.raises(ingle.BadRequestError) as e:
        with client.audio.speech.with_streaming_response.create(
            model=SPEECH, voice="joe", input=TWO
        ) as r:
            r.iter_bytes(chunk_size=0)
    assert e.value.param == "chunk_size"


def test_sse(client):
    with client.audio.speech.with_streaming_response.create(
        model=SPEECH, voice="joe", input=PARAGRAPH, stream_format="sse", response_format="wav"
    ) as r:
        assert r.content_type == "text/event-stream"
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    *deltas, done = events
    assert len(deltas) >= 5 and {e["type"] for e in deltas} == {"speech.audio.delta"}
    assert done["type"] == "speech.audio.done" and done["usage"]["total_tokens"] > 0
    audio = b"".join(base64.b64decode(e["audio"]) for e in deltas)
    rate, channels, seconds, codec = decode(audio)
    assert (rate, channels, codec) == (22050, 1, "pcm_s16le") and seconds > 10
    # The whole response: every event, as an HTTP client would receive it.
    whole = client.audio.speech.create(model=SPEECH, voice="joe", input=TWO, stream_format="sse")
    assert whole.content_type == "text/event-stream"
    *deltas, done = sse_events(whole.text)
    assert done["type"] == "speech.audio.done"
    assert decode(b"".join(base64.b64decode(e["audio"]) for e in deltas))[:2] == (22050, 1)
    with pytest.raises(ValueError, match="sse"):
        whole.to_numpy()


BAD = [
    ("empty-input", dict(input=""), "input"),
    ("blank-input", dict(input="   "), "input"),
    ("long-input", dict(input="a" * 4097), "input"),
    ("surrogate-input", dict(input="Hi \ud800"), "input"),
    ("input-int", dict(input=42), "input"),
    ("no-input", dict(input=ingle.NOT_GIVEN), "input"),
    ("unknown-voice", dict(voice="bob"), "voice"),
    ("voice-int", dict(voice=3), "voice"),
    ("voice-object", dict(voice={"id": "voice_1234"}), "voice"),
    ("voice-none", dict(voice=None), "voice"),
    ("speed-5", dict(speed=5), "speed"),
    ("speed-nan", dict(speed=float("nan")), "speed"),
    ("speed-inf", dict(extra_body={"speed": float("inf")}), "speed"),
    ("speed-str", dict(speed="fast"), "speed"),
    ("speed-bool", dict(speed=True), "speed"),
    ("speed-huge", dict(speed=10**400), "speed"),
    ("ogg", dict(response_format="ogg"), "response_format"),
    ("format-int", dict(response_format=1), "response_format"),
    ("stream-format", dict(stream_format="chunks"), "stream_format"),
    ("instructions", dict(instructions="Speak like a pirate."), "instructions"),
    ("instructions-surrogate", dict(instructions="\udfff"), "instructions"),
    ("unknown-argument", dict(frobnicate=1), "frobnicate"),
    ("model-surrogate", dict(model="\ud800"), "model"),
]


def bad_request(params):
    request = dict(model=SPEECH, voice="alloy", input="Hello.")
    request.update(params)
    return request


def check(error, param):
    assert type(error) is ingle.BadRequestError, repr(error)
    assert error.status_code == 400 and error.param == param, error.message
    assert param in error.message and error.body["param"] == param
    error.message.encode("utf-8")


@pytest.mark.parametrize("params, param", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments_name_the_parameter(client, params, param):
    with pytest.raises(ingle.OpenAIError) as e:
        client.audio.speech.create(**bad_request(params))
    check(e.value, param)
    # The streaming form refuses it when the `with` block is entered, before any audio.
    with pytest.raises(ingle.OpenAIError) as e:
        with client.audio.speech.with_streaming_response.create(**bad_request(params)):
            raise AssertionError("entered")
    check(e.value, param)
    still_works(client)


def test_unknown_model(client):
    with pytest.raises(ingle.NotFoundError) as e:
        client.audio.speech.create(model="@nobody/voice", voice="alloy", input="Hello.")
    assert e.value.param == "model"
    with pytest.raises(ingle.BadRequestError) as e:
        client.audio.speech.create(model="@local/smollm2-135m-instruct", voice="alloy", input="Hi.")
    assert e.value.param == "model" and "audio.speech" in e.value.message
    still_works(client)


@pytest.mark.parametrize("how", ["break", "close", "with", "gc"])
def test_stopping_a_stream_stops_synthesis(client, how):
    before = wait_idle(client)["cancelled_requests"]
    streaming = client.audio.speech.with_streaming_response
    if how == "break":
        with streaming.create(model=SPEECH, voice="joe", input=PARAGRAPH) as r:
            for _ in r.iter_bytes():
                break
            # Stopped at the `break`, before the block is left.
            assert wait_idle(client)["cancelled_requests"] == before + 1
    elif how == "close":
        with streaming.create(model=SPEECH, voice="joe", input=PARAGRAPH) as r:
            chunks = r.iter_bytes()
            next(chunks)
            r.close()
            assert r.is_closed
            assert list(chunks) == []
    elif how == "with":
        with streaming.create(model=SPEECH, voice="joe", input=PARAGRAPH) as r:
            r.iter_bytes()  # not even started: synthesis is stopped all the same
    else:
        manager = streaming.create(model=SPEECH, voice="joe", input=PARAGRAPH)
        r = manager.__enter__()
        chunks = r.iter_bytes()
        next(chunks)
        del manager, r, chunks
        gc.collect()
    after = wait_idle(client)
    assert after["cancelled_requests"] == before + 1 and after["active_requests"] == 0
    still_works(client)


def test_gil_is_released_while_synthesising(client):
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
    client.audio.speech.create(model=SPEECH, voice="joe", input=PARAGRAPH)
    elapsed = time.monotonic() - start
    running = False
    thread.join()
    assert ticks > elapsed * 1000 * 0.3, (ticks, elapsed)


def test_threads_share_the_speech_model(client):
    results = {}

    def speak(i):
        results[i] = client.audio.speech.create(
            model=SPEECH, voice="joe", input=TWO, response_format="flac"
        )

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results.values():
        assert abs(decode(r.content)[2] - seconds_of(r)) < 0.001


def test_async_create_and_streaming(tmp_path):
    async def main():
        async with ingle.AsyncOpenAI() as aclient:
            r = await aclient.audio.speech.create(
                model=SPEECH, voice="alloy", input=TWO, response_format="opus"
            )
            assert isinstance(r, ingle.HttpxBinaryResponseContent)
            rate, channels, seconds, _ = decode(await r.aread())
            assert (rate, channels) == (48000, 1) and abs(seconds - seconds_of(r)) < 0.03
            chunks = [c async for c in await r.aiter_bytes(1000)]
            assert b"".join(chunks) == r.content

            async with aclient.audio.speech.with_streaming_response.create(
                model=SPEECH, voice="alloy", input=PARAGRAPH, response_format="pcm"
            ) as s:
                assert isinstance(s, ingle.AsyncStreamedBinaryAPIResponse)
                assert s.content_type == "audio/pcm"
                chunks = [c async for c in s.iter_bytes()]
            assert len(chunks) >= 5 and len(b"".join(chunks)) / 2 / 24000 > 10

            path = tmp_path / "async.mp3"
            async with aclient.audio.speech.with_streaming_response.create(
                model=SPEECH, voice="alloy", input=TWO
            ) as s:
                await s.stream_to_file(path)
            assert decode(path.read_bytes())[:2] == (22050, 1)

            with pytest.raises(ingle.BadRequestError) as e:
                await aclient.audio.speech.create(model=SPEECH, voice="alloy", input="Hi.", speed=9)
            assert e.value.param == "speed"
            with pytest.raises(ingle.BadRequestError) as e:
                async with aclient.audio.speech.with_streaming_response.create(
                    model=SPEECH, voice=7, input="Hi."
                ):
                    raise AssertionError("entered")
            assert e.value.param == "voice"
            r = await aclient.audio.speech.create(model=SPEECH, voice="alloy", input="Still here.")
            assert len(r.to_numpy()) > 0

    asyncio.run(main())


@pytest.mark.parametrize("how", ["break", "cancel"])
def test_async_stopping_a_stream_stops_synthesis(how):
    async def main():
        aclient = ingle.AsyncOpenAI()
        before = (await aclient.metrics(SPEECH))["cancelled_requests"]

        async def consume():
            async with aclient.audio.speech.with_streaming_response.create(
                model=SPEECH, voice="joe", input=PARAGRAPH
            ) as s:
                async for _ in s.iter_bytes():
                    if how == "break":
                        break
                    await asyncio.sleep(10)  # cancelled here

        task = asyncio.create_task(consume())
        if how == "cancel":
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            await task
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            metrics = await aclient.metrics(SPEECH)
            if metrics["active_requests"] == 0:
                break
            await asyncio.sleep(0.01)
        assert metrics["active_requests"] == 0
        assert metrics["cancelled_requests"] == before + 1

    asyncio.run(main())


def test_async_cancelling_a_whole_create_stops_synthesis():
    async def main():
        aclient = ingle.AsyncOpenAI()
        await aclient.audio.speech.create(model=SPEECH, voice="joe", input="Warm up.")
        before = await aclient.metrics(SPEECH)
        task = asyncio.create_task(
            aclient.audio.speech.create(model=SPEECH, voice="joe", input=PARAGRAPH * 3)
        )
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            metrics = await aclient.metrics(SPEECH)
            if metrics["active_requests"] == 0:
                break
            await asyncio.sleep(0.01)
        assert metrics["active_requests"] == 0
        assert metrics["cancelled_requests"] == before["cancelled_requests"] + 1
        # Stopped before the next sentence: far fewer than the 15 sentences were made.
        assert metrics["generated_tokens"] - before["generated_tokens"] < 12

    asyncio.run(main())
