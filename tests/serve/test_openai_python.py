"""`ingle serve` driven by the official `openai` Python package. scripts/test-serve starts the
server and passes its URL (INGLE_SERVE_URL) and API key (INGLE_SERVE_KEY)."""

import os
import pathlib
import re
import struct

import openai
import pytest
import srt
import webvtt

URL = os.environ["INGLE_SERVE_URL"]
KEY = os.environ["INGLE_SERVE_KEY"]
CHAT = "@local/smollm2-135m-instruct"
EMBED = "@local/all-minilm-l6-v2"
SPEECH = "@local/piper-en-us-joe-medium"
WHISPER = "@local/whisper-tiny-en"
FRANCE = [{"role": "user", "content": "Name the capital of France."}]


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
    tags = [CHAT, "@local/qwen2.5-coder-0.5b-instruct", EMBED, SPEECH, WHISPER]
    # The optional 1.5B (not in `ingle pull --all`) is served once pulled, after the built-ins.
    if (MODELS_DIR / "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf").is_file():
        tags.append("@local/qwen2.5-coder-1.5b-instruct")
    tags.append("@local/whisper-base")  # the multilingual Whisper, a catalog model
    # Each also without its namespace, for frameworks that read `@local/` as a provider.
    assert ids == tags + [tag.removeprefix("@local/") for tag in tags]
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


# ---- audio.transcriptions ---------------------------------------------------------------------

# The recordings scripts/fetch-models puts in the models directory (ingle's default_models_dir).
MODELS_DIR = pathlib.Path(
    os.environ.get("INGLE_MODELS_DIR")
    or pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "ingle" / "models"
)
BECKETT = MODELS_DIR / "recordings" / "beckett.wav"
# "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.", normalised.
BECKETT_WORDS = "ever tried ever failed no matter try again fail again fail better"
# The multilingual Whisper, and espeak-ng French in the repository (scripts/make-speech-clips):
# "Bonjour. Je m'appelle Marie et j'habite à Paris. Le matin, je bois un café avec du lait. Le
# soir, je mange du pain et du fromage."
MULTILINGUAL = "@local/whisper-base"
FRENCH = pathlib.Path(__file__).resolve().parents[1] / "data" / "speech" / "fr.flac"
# A translation of the French clip: "coffee" (espeak says "café" clearly), English around it,
# no French left. faster-whisper int8 on the same weights: "Hello. I called Mary and I am going
# to Paris. Again, I see a coffee with bread. ..."; ingle int8: "Hello. I called Marie and I am
# here. Again, I see a coffee with Bure. ..." (espeak's French is hard: only some words carry).
ENGLISH_WORDS = {"i", "and", "with", "the", "a", "to"}
FRENCH_WORDS = {"je", "et", "avec", "du", "le", "bonjour"}


def words(text):
    return " ".join(re.sub(r"[^a-z0-9']+", " ", text.lower()).split())


def transcribe(client, **kwargs):
    with open(BECKETT, "rb") as file:
        return client.audio.transcriptions.create(model=WHISPER, file=file, **kwargs)


def test_transcription_json_and_text(client):
    transcription = transcribe(client)
    assert isinstance(transcription, openai.types.audio.Transcription)
    assert words(transcription.text) == BECKETT_WORDS, transcription.text
    assert transcription.usage.type == "duration" and abs(transcription.usage.seconds - 9.96) < 0.05
    text = transcribe(client, response_format="text", language="en", temperature=0)
    assert isinstance(text, str) and text.strip() == transcription.text
    # The file as (name, bytes), as the SDK also takes it.
    named = client.audio.transcriptions.create(model=WHISPER, file=("speech.wav", BECKETT.read_bytes()))
    assert named.text == transcription.text


def test_transcription_verbose_json_with_words_and_segments(client):
    verbose = transcribe(client, response_format="verbose_json", timestamp_granularities=["word", "segment"])
    assert isinstance(verbose, openai.types.audio.TranscriptionVerbose)
    assert verbose.language == "english" and abs(verbose.duration - 9.96) < 0.05
    assert words(" ".join(w.word for w in verbose.words)) == BECKETT_WORDS
    starts = [w.start for w in verbose.words]
    assert starts == sorted(starts) and all(w.start <= w.end <= 10.5 for w in verbose.words)
    assert isinstance(verbose.segments[0], openai.types.audio.TranscriptionSegment)
    assert words(" ".join(s.text for s in verbose.segments)) == BECKETT_WORDS
    assert [s.id for s in verbose.segments] == list(range(len(verbose.segments)))
    assert all(s.start < s.end for s in verbose.segments)


def test_transcription_subtitles_parse(client):
    # SubRip and WebVTT, read by the `srt` and `webvtt-py` packages.
    text = transcribe(client, response_format="srt")
    assert isinstance(text, str)
    cues = list(srt.parse(text, ignore_errors=False))
    assert [c.index for c in cues] == list(range(1, len(cues) + 1)) and len(cues) >= 2
    assert words(" ".join(c.content for c in cues)) == BECKETT_WORDS
    assert all(c.start < c.end for c in cues) and cues[-1].end.total_seconds() <= 10.5
    vtt = transcribe(client, response_format="vtt")
    captions = webvtt.from_string(vtt, strict=True).captions
    assert len(captions) == len(cues)
    assert words(" ".join(c.text for c in captions)) == BECKETT_WORDS
    for caption, cue in zip(captions, cues):
        assert caption.start_in_seconds == int(cue.start.total_seconds())
        assert caption.end_in_seconds == int(cue.end.total_seconds())


def test_transcription_stream(client):
    whole = transcribe(client)
    events = list(transcribe(client, stream=True))
    *deltas, done = events
    assert deltas and all(isinstance(e, openai.types.audio.TranscriptionTextDeltaEvent) for e in deltas)
    assert isinstance(done, openai.types.audio.TranscriptionTextDoneEvent)
    assert "".join(e.delta for e in deltas).strip() == whole.text == done.text
    assert done.usage.type == "duration" and abs(done.usage.seconds - 9.96) < 0.05


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # audio.translations
def test_transcription_and_translation_errors(client):
    with pytest.raises(openai.BadRequestError) as e:
        transcribe(client, language="de")
    assert e.value.status_code == 400 and e.value.body["param"] == "language"
    with pytest.raises(openai.BadRequestError) as e:
        transcribe(client, response_format="json", timestamp_granularities=["word"])
    assert e.value.body["param"] == "timestamp_granularities"
    with pytest.raises(openai.BadRequestError) as e:
        transcribe(client, include=["logprobs"])
    assert e.value.body["param"] == "include"
    with pytest.raises(openai.BadRequestError) as e:
        client.audio.transcriptions.create(model=WHISPER, file=("notes.txt", b"not audio"))
    assert e.value.body["param"] == "file"
    # tiny.en is English-only: it cannot translate.
    with pytest.raises(openai.BadRequestError) as e:
        with open(BECKETT, "rb") as file:
            client.audio.translations.create(model=WHISPER, file=file)
    assert e.value.body["param"] == "model"
    assert "English-only" in e.value.body["message"] and "cannot translate" in e.value.body["message"]
    assert words(transcribe(client).text) == BECKETT_WORDS


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # audio.translations
def test_multilingual_detection_and_translation(client):
    with open(FRENCH, "rb") as file:
        heard = client.audio.transcriptions.create(model=MULTILINGUAL, file=file, response_format="verbose_json")
    assert isinstance(heard, openai.types.audio.TranscriptionVerbose)
    assert heard.language == "french", (heard.language, heard.text)
    assert "bonjour" in words(heard.text) and "paris" in words(heard.text), heard.text
    with open(FRENCH, "rb") as file:
        translation = client.audio.translations.create(model=MULTILINGUAL, file=file)
    assert isinstance(translation, openai.types.audio.Translation)
    assert translation.to_dict() == {"text": translation.text}
    found = set(words(translation.text).split())
    assert "coffee" in found and len(found & ENGLISH_WORDS) >= 2, translation.text
    assert not found & FRENCH_WORDS, translation.text
    verbose = client.audio.translations.create(
        model=MULTILINGUAL, file=("fr.flac", FRENCH.read_bytes()), response_format="verbose_json"
    )
    assert isinstance(verbose, openai.types.audio.TranslationVerbose)
    assert verbose.language == "english" and verbose.to_dict()["task"] == "translate"
    assert verbose.text == translation.text and abs(verbose.duration - 11.17) < 0.01
    assert isinstance(verbose.segments[0], openai.types.audio.TranscriptionSegment)


def test_request_ids_as_the_sdk_reads_them(client):
    """Every response carries X-Request-Id (the SDK's `_request_id`), the client's own when it
    sends one (a router's), and errors carry it too."""
    completion = client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "Hi"}],
                                                max_tokens=1)
    assert completion._request_id.startswith("req_")
    with pytest.raises(openai.NotFoundError) as error:
        client.chat.completions.create(model="@nobody/nothing", messages=[{"role": "user", "content": "Hi"}],
                                       extra_headers={"X-Request-Id": "trace-42"})
    assert error.value.request_id == "trace-42"
    assert error.value.body["request_id"] == "trace-42"
