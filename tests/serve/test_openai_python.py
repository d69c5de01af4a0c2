"""`ingle serve` driven by the official `openai` Python package. scripts/test-serve starts the
server and passes its URL (INGLE_SERVE_URL) and API key (INGLE_SERVE_KEY)."""

import os
import struct

import openai
import pytest

URL = os.environ["INGLE_SERVE_URL"]
KEY = os.environ["INGLE_SERVE_KEY"]
CHAT = "@local/smollm2-135m-instruct"
EMBED = "@local/all-minilm-l6-v2"
SPEECH = "@local/piper-en-us-joe-medium"
FRANCE = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def client():
    return openai.OpenAI(base_url=URL, api_key=KEY, max_retries=0)


def test_chat_whole_and_streamed_with_usage(client):
    whole = client.chat.completions.create(model=CHAT, messages=FRANCE, temperature=0, max_tokens=12)
    assert isinstance(whole, openai.types.chat.ChatCompletion)
    assert "Paris" in whole.choices[0].message.content
    stream = client.chat.completions.create(
        model=CHAT, messages=FRANCE, temperature=0, max_tokens=12, stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == whole.usage.total_tokens


def test_completions(client):
    r = client.completions.create(model=CHAT, prompt="Once upon a time", max_tokens=5, temperature=0)
    assert r.object == "text_completion" and r.usage.completion_tokens == 5
    text = "".join(c.choices[0].text for c in client.completions.create(
        model=CHAT, prompt="Once upon a time", max_tokens=5, temperature=0, stream=True))
    assert text == r.choices[0].text


def test_embeddings_float_and_base64(client):
    texts = ["The capital of France is Paris.", "Paris is France's capital city."]
    floats = client.embeddings.create(model=EMBED, input=texts, encoding_format="float")
    a, b = (d.embedding for d in floats.data)
    assert len(a) == 384 and abs(sum(x * y for x, y in zip(a, b)) - 0.966) < 0.01
    # Without encoding_format the SDK asks for base64 and decodes it: the same float32 numbers
    # (the JSON floats are their shortest float32 spelling, so compare at float32).
    decoded = client.embeddings.create(model=EMBED, input=texts)
    as_f32 = lambda v: struct.pack(f"<{len(v)}f", *v)  # noqa: E731
    assert as_f32(decoded.data[0].embedding) == as_f32(a)
    raw = client.embeddings.create(model=EMBED, input="Hi", encoding_format="base64", dimensions=16)
    assert isinstance(raw.data[0].embedding, str)


def test_models(client):
    ids = [m.id for m in client.models.list()]
    assert ids == [CHAT, EMBED, SPEECH]
    assert client.models.retrieve(CHAT).id == CHAT


def test_errors(client):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="@nobody/nothing", messages=FRANCE)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=CHAT, messages=FRANCE, temperature=9)
    assert e.value.status_code == 400 and e.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model=EMBED, input=[], encoding_format="float")
    wrong = openai.OpenAI(base_url=URL, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()


PARAGRAPH = (
    "Hello from the local inference library. It runs open models inside your own process. "
    "Nothing is sent over the network."
)


def test_speech_create(client):
    audio = client.audio.speech.create(model=SPEECH, voice="alloy", input=PARAGRAPH, response_format="wav")
    assert audio.response.headers["content-type"] == "audio/wav"
    # The wav is streamed (its sizes say "unknown"): read the frames the data holds.
    data = audio.content
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    rate, channels, bits = struct.unpack("<I", data[24:28])[0], data[22], data[34]
    assert (rate, channels, bits) == (22050, 1, 16)
    seconds = (len(data) - 44) / 2 / rate
    assert 4.0 < seconds < 12.0
    mp3 = client.audio.speech.create(model=SPEECH, voice="nova", input="Hi there.", speed=1.5)
    assert mp3.response.headers["content-type"] == "audio/mpeg" and mp3.content[:2] in (b"\xff\xf3", b"\xff\xf2", b"\xff\xfb")


def test_speech_streamed_to_file(client, tmp_path):
    path = tmp_path / "speech.flac"
    with client.audio.speech.with_streaming_response.create(
        model=SPEECH, voice="alloy", input=PARAGRAPH, response_format="flac"
    ) as response:
        assert response.headers["content-type"] == "audio/flac"
        response.stream_to_file(path)
    assert path.read_bytes()[:4] == b"fLaC" and path.stat().st_size > 10_000
    chunks = []
    with client.audio.speech.with_streaming_response.create(
        model=SPEECH, voice="alloy", input=PARAGRAPH, response_format="pcm", stream_format="sse"
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        chunks = list(response.iter_lines())
    events = [line for line in chunks if line.startswith("data: ")]
    assert '"speech.audio.done"' in events[-1] and len(events) >= 4


def test_speech_errors(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.audio.speech.create(model=SPEECH, voice="nobody", input="Hi.")
    assert e.value.body["param"] == "voice"
    with pytest.raises(openai.BadRequestError) as e:
        client.audio.speech.create(model=SPEECH, voice="alloy", input="Hi.", speed=9)
    assert e.value.body["param"] == "speed"
