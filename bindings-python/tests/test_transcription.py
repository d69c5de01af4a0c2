"""``client.audio.transcriptions`` (and ``translations``) on the default transcription model
(Whisper tiny.en), with real recordings. Subtitles are parsed with ``srt`` and ``webvtt-py``
(not ingle's code); responses are validated against the ``openai`` package's own types. Audio
given as samples is decoded here with the stdlib ``wave`` module; its 48 kHz stereo form is made
by repeating each sample 3 times (a crude upsampling that the engine's resampler has to undo).
The multilingual Whisper base detects the language of espeak-ng clips in French, German and
Spanish (``tests/data/speech``, made by scripts/make-speech-clips) and translates the French.
"""

import asyncio
import functools
import io
import os
import pathlib
import re
import threading
import time
import wave

import numpy as np
import openai
import pytest
import srt
import webvtt
from openai.types.audio import (
    Transcription,
    TranscriptionTextDeltaEvent,
    TranscriptionTextDoneEvent,
    TranscriptionVerbose,
    Translation,
    TranslationVerbose,
)

import ingle

MODEL = "@local/whisper-tiny-en"
MULTILINGUAL = "@local/whisper-base"
SPEECH = "@local/piper-en-us-joe-medium"
RECORDINGS = (
    pathlib.Path(
        os.environ.get("INGLE_MODELS_DIR")
        or pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
        / "ingle"
        / "models"
    )
    / "recordings"
)
BECKETT = RECORDINGS / "beckett.wav"
TWO_CITIES = RECORDINGS / "two_cities.wav"  # 44 s at 48 kHz: two Whisper windows
BECKETT_SECONDS = 159414 / 16000
# Whisper tiny.en's words, whatever its punctuation ("No matter, try again" / "No matter. Try").
BECKETT_WORDS = "ever tried ever failed no matter try again fail again fail better"
FOX = "The quick brown fox jumps over the lazy dog."
# espeak-ng speech, in the repository. French: "Bonjour. Je m'appelle Marie et j'habite à Paris.
# Le matin, je bois un café avec du lait. Le soir, je mange du pain et du fromage."
CLIPS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "speech"
FRENCH, GERMAN, SPANISH = (CLIPS / f"{code}.flac" for code in ("fr", "de", "es"))
FRENCH_SECONDS = 178666 / 16000
# A translation of the French clip: "coffee" (espeak says "café" clearly), English around it,
# no French left. faster-whisper int8 on the same weights: "Hello. I called Mary and I am going
# to Paris. Again, I see a coffee with bread. ..."; ingle int8: "Hello. I called Marie and I am
# here. Again, I see a coffee with Bure. ..." (espeak's French is hard: only some words carry).
ENGLISH_WORDS = {"i", "and", "with", "the", "a", "to"}
FRENCH_WORDS = {"je", "et", "avec", "du", "le", "bonjour"}


def normalised(text):
    return " ".join(re.sub(r"[^a-z0-9' ]", " ", text.lower()).split())


def word_errors(a, b):
    """Word-level edit distance between two texts, normalised."""
    a, b = normalised(a).split(), normalised(b).split()
    row = list(range(len(b) + 1))
    for i, x in enumerate(a):
        previous, row[0] = row[0], i + 1
        for j, y in enumerate(b):
            previous, row[j + 1] = row[j + 1], min(previous + (x != y), row[j] + 1, row[j + 1] + 1)
    return row[-1]


@functools.lru_cache(maxsize=None)
def samples_of(path, rate):
    """A 16-bit mono wav file as float32 samples, decoded by the stdlib's ``wave``."""
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, rate)
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    samples = pcm.astype(np.float32) / 32768
    samples.flags.writeable = False
    return samples


def beckett_samples():
    """beckett.wav at 16 kHz."""
    return samples_of(BECKETT, 16000)


def long_audio():
    """two_cities.wav 4 times: 178 s at 48 kHz, 7 Whisper windows (about 0.3 s each)."""
    return np.tile(samples_of(TWO_CITIES, 48000), 4)


def wait_idle(client, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        metrics = client.metrics(MODEL)
        if metrics["active_requests"] == 0:
            return metrics
        time.sleep(0.01)
    raise AssertionError(f"still busy: {client.metrics(MODEL)}")


def still_works(client):
    r = client.audio.transcriptions.create(model=MODEL, file=BECKETT)
    assert normalised(r.text) == BECKETT_WORDS


@pytest.fixture(scope="module")
def beckett_json(client):
    """The default (json) transcription of the file: what every other form is compared with."""
    r = client.audio.transcriptions.create(model=MODEL, file=BECKETT)
    assert normalised(r.text) == BECKETT_WORDS, r.text
    return r


class PathLike:
    """An os.PathLike that is not a pathlib.Path."""

    def __init__(self, path):
        self.path = str(path)

    def __fspath__(self):
        return self.path


FILE_FORMS = {
    "path": lambda: BECKETT,
    "pathlike": lambda: PathLike(BECKETT),
    "open-file": lambda: open(BECKETT, "rb"),
    "bytes": lambda: BECKETT.read_bytes(),
    "bytesio": lambda: io.BytesIO(BECKETT.read_bytes()),
    "tuple": lambda: ("beckett.wav", BECKETT.read_bytes()),
    "tuple-content-type": lambda: ("speech", io.BytesIO(BECKETT.read_bytes()), "audio/wav"),
    "tuple-no-name": lambda: (None, BECKETT, "audio/wav", {"x-a": "b"}),
}


@pytest.mark.parametrize("form", FILE_FORMS)
def test_every_file_form(client, beckett_json, form):
    file = FILE_FORMS[form]()
    try:
        r = client.audio.transcriptions.create(model=MODEL, file=file)
    finally:
        if hasattr(file, "close"):
            file.close()
    assert isinstance(r, ingle.types.Transcription)
    # The same audio, so the same text as from the path, to the character.
    assert r.text == beckett_json.text
    assert r.usage.type == "duration" and abs(r.usage.seconds - BECKETT_SECONDS) < 0.001


def test_json_is_openais_transcription(beckett_json):
    dumped = beckett_json.model_dump()
    assert dumped == Transcription.model_validate(dumped).model_dump()
    assert set(dumped) == set(Transcription.model_fields)
    assert beckett_json.to_dict() == {
        "text": beckett_json.text,
        "usage": {"type": "duration", "seconds": round(BECKETT_SECONDS, 3)},
    }


def test_numpy_samples(client, beckett_json):
    samples = beckett_samples()
    r = client.audio.transcriptions.create(model=MODEL, file=samples, sample_rate=16000)
    # The same samples as the file's, so the same text.
    assert r.text == beckett_json.text
    assert abs(r.usage.seconds - BECKETT_SECONDS) < 0.001
    # 48 kHz stereo: every sample 3 times, both channels the same; resampled to 16 kHz.
    stereo = np.repeat(np.repeat(samples, 3)[:, None], 2, axis=1)
    assert stereo.shape == (3 * len(samples), 2) and stereo.dtype == np.float32
    r = client.audio.transcriptions.create(model=MODEL, file=stereo, sample_rate=48000)
    assert normalised(r.text) == BECKETT_WORDS, r.text
    assert abs(r.usage.seconds - BECKETT_SECONDS) < 0.001
    # Any layout and float type: a non-contiguous float64 view (the left channel).
    left = stereo.astype(np.float64)[:, 0]
    assert not left.flags.c_contiguous
    r = client.audio.transcriptions.create(model=MODEL, file=left, sample_rate=48000)
    assert normalised(r.text) == BECKETT_WORDS, r.text


def test_text_format(client, beckett_json):
    r = client.audio.transcriptions.create(model=MODEL, file=BECKETT, response_format="text")
    assert type(r) is str and r == beckett_json.text + "\n"


def test_a_format_given_in_extra_body_is_the_one_answered(client, beckett_json):
    # openai merges `extra_body` into the request; the answer is read in the format sent.
    r = client.audio.transcriptions.create(
        model=MODEL, file=BECKETT, extra_body={"response_format": "text"}
    )
    assert type(r) is str and r == beckett_json.text + "\n"
    verbose = client.audio.transcriptions.create(
        model=MODEL, file=BECKETT, extra_body={"response_format": "verbose_json"}
    )
    assert type(verbose) is ingle.types.TranscriptionVerbose and verbose.segments, verbose


def test_srt_and_vtt_parse_and_match_the_segments(client, beckett_json):
    verbose = client.audio.transcriptions.create(
        model=MODEL, file=BECKETT, response_format="verbose_json"
    )
    segments = verbose.segments
    assert len(segments) >= 2

    body = client.audio.transcriptions.create(model=MODEL, file=BECKETT, response_format="srt")
    assert type(body) is str
    subtitles = list(srt.parse(body))  # raises on anything that is not SubRip
    assert [s.index for s in subtitles] == list(range(1, len(segments) + 1))
    for subtitle, segment in zip(subtitles, segments):
        assert subtitle.start.total_seconds() == pytest.approx(segment.start, abs=0.0005)
        assert subtitle.end.total_seconds() == pytest.approx(segment.end, abs=0.0005)
        assert subtitle.content == segment.text.strip()
    assert normalised(" ".join(s.content for s in subtitles)) == normalised(beckett_json.text)

    body = client.audio.transcriptions.create(model=MODEL, file=BECKETT, response_format="vtt")
    assert type(body) is str and body.startswith("WEBVTT\n")
    captions = webvtt.from_string(body, strict=True).captions
    assert len(captions) == len(segments)
    previous_end = 0.0
    for caption, segment in zip(captions, segments):
        start = caption.start_time.in_milliseconds() / 1000
        end = caption.end_time.in_milliseconds() / 1000
        assert start == pytest.approx(segment.start, abs=0.0005)
        assert end == pytest.approx(segment.end, abs=0.0005)
        # The last segment ends at Whisper's timestamp token (0.02 s steps), which may be past
        # the audio's end by a few hundredths.
        assert previous_end <= start < end <= BECKETT_SECONDS + 0.1
        previous_end = end
        assert caption.text == segment.text.strip()


def check_words(verbose):
    words = verbose.words
    assert normalised(" ".join(w.word for w in words)) == normalised(verbose.text)
    previous = 0.0
    for w in words:
        assert w.word == w.word.strip() and w.word
        assert previous <= w.start <= w.end <= verbose.duration, (previous, w)
        previous = w.end
    assert words[-1].end > 0.5 * verbose.duration


def test_verbose_json_with_words_and_segments(client, beckett_json):
    r = client.audio.transcriptions.create(
        model=MODEL,
        file=BECKETT,
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    assert isinstance(r, ingle.types.TranscriptionVerbose)
    dumped = r.model_dump()
    assert dumped == TranscriptionVerbose.model_validate(dumped).model_dump()
    assert r.task == "transcribe" and r.language == "english"
    assert r.duration == pytest.approx(BECKETT_SECONDS, abs=0.001)
    assert r.usage.type == "duration" and r.usage.seconds == pytest.approx(r.duration)
    assert normalised(r.text) == normalised(beckett_json.text)
    check_words(r)
    # Segments in order, within the audio, their words inside them, their text the whole.
    assert [s.id for s in r.segments] == list(range(len(r.segments)))
    assert "".join(s.text for s in r.segments).strip() == r.text
    previous_end = 0.0
    for s in r.segments:
        assert previous_end <= s.start < s.end <= r.duration
        previous_end = s.end
        inside = [w.word for w in r.words if s.start <= w.start and w.end <= s.end]
        assert normalised(" ".join(inside)) == normalised(s.text)
        assert s.tokens and s.temperature == 0.0 and s.avg_logprob < 0
        assert 0 <= s.no_speech_prob <= 1 and s.compression_ratio > 0
    # Words only: no segments; the default: segments only.
    words_only = client.audio.transcriptions.create(
        model=MODEL, file=BECKETT, response_format="verbose_json", timestamp_granularities=["word"]
    )
    assert words_only.segments is None
    check_words(words_only)
    default = client.audio.transcriptions.create(
        model=MODEL, file=BECKETT, response_format="verbose_json"
    )
    assert default.words is None and len(default.segments) >= 2


@pytest.mark.parametrize("response_format", [ingle.NOT_GIVEN, "text"])
def test_stream_deltas_make_the_text(client, beckett_json, response_format):
    stream = client.audio.transcriptions.create(
        model=MODEL, file=BECKETT, stream=True, response_format=response_format
    )
    assert isinstance(stream, ingle.Stream)
    events = list(stream)
    *deltas, done = events
    assert len(deltas) >= 2
    for event in deltas:
        assert isinstance(event, ingle.types.TranscriptionTextDeltaEvent)
        assert event.type == "transcript.text.delta" and event.delta
        dumped = event.model_dump()
        assert dumped == TranscriptionTextDeltaEvent.model_validate(dumped).model_dump()
    assert "".join(e.delta for e in deltas) == beckett_json.text
    assert isinstance(done, ingle.types.TranscriptionTextDoneEvent)
    assert done.type == "transcript.text.done" and done.text == beckett_json.text
    assert done.usage.type == "duration"
    assert done.usage.seconds == pytest.approx(BECKETT_SECONDS, abs=0.001)
    # openai's done event declares only token usage; all else is its shape.
    dumped = done.model_dump()
    dumped.pop("usage")
    theirs = TranscriptionTextDoneEvent.model_validate(dumped).model_dump()
    assert theirs.pop("usage") is None and dumped == theirs


def test_speech_round_trip(client):
    speech = client.audio.speech.create(
        model=SPEECH, voice="alloy", input=FOX, response_format="wav"
    )
    # The voice samples its durations, so each synthesis differs a little and Whisper tiny can
    # mishear one word of it ("quit brown fox"); more than one is a failure.
    r = client.audio.transcriptions.create(model=MODEL, file=("fox.wav", speech.content))
    assert word_errors(r.text, FOX) <= 1, r.text
    # The model's own samples, at its 22050 Hz.
    r = client.audio.transcriptions.create(
        model=MODEL, file=speech.to_numpy(), sample_rate=speech.sample_rate
    )
    assert word_errors(r.text, FOX) <= 1, r.text


def test_language_prompt_temperature_and_openai_arguments(client, beckett_json):
    r = client.audio.transcriptions.create(
        model=MODEL,
        file=BECKETT,
        language="en",
        prompt="Samuel Beckett, Worstward Ho.",
        temperature=0.0,
        include=openai.omit,
        chunking_strategy=None,
        timestamp_granularities=openai.NOT_GIVEN,
        extra_body={"response_format": "verbose_json"},
        extra_headers={"x-a": "b"},
        timeout=30,
    )
    assert isinstance(r, ingle.types.TranscriptionVerbose)
    assert normalised(r.text) == BECKETT_WORDS, r.text


def bad_audio():
    return dict(
        empty=(dict(file=b""), "file"),
        empty_bytesio=(dict(file=io.BytesIO()), "file"),
        corrupt_wav=(dict(file=("a.wav", b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 40)), "file"),
        truncated=(dict(file=BECKETT.read_bytes()[:30]), "file"),
        not_audio=(dict(file=("notes.txt", b"Ever tried. Ever failed. " * 20)), "file"),
        str_path=(dict(file=str(BECKETT)), "file"),
        text_mode=(dict(file=io.StringIO("RIFF")), "file"),
        not_a_file=(dict(file=3.5), "file"),
        bad_tuple=(dict(file=("a.wav",)), "file"),
        no_file=(dict(file=ingle.NOT_GIVEN), "file"),
        file_none=(dict(file=None), "file"),
        array_no_rate=(dict(file=beckett_samples()), "sample_rate"),
        array_rate_zero=(dict(file=beckett_samples(), sample_rate=0), "sample_rate"),
        array_rate_float=(dict(file=beckett_samples(), sample_rate=16000.0), "sample_rate"),
        rate_for_a_file=(dict(file=BECKETT, sample_rate=16000), "sample_rate"),
        array_int16=(dict(file=np.zeros(16000, np.int16), sample_rate=16000), "file"),
        array_3d=(dict(file=np.zeros((100, 2, 2), np.float32), sample_rate=16000), "file"),
        array_empty=(dict(file=np.zeros(0, np.float32), sample_rate=16000), "file"),
        array_nan=(dict(file=np.full(16000, np.nan, np.float32), sample_rate=16000), "file"),
        language_de=(dict(language="de"), "language"),
        language_int=(dict(language=1), "language"),
        words_without_verbose=(dict(timestamp_granularities=["word"]), "timestamp_granularities"),
        segments_in_srt=(
            dict(timestamp_granularities=["segment"], response_format="srt"),
            "timestamp_granularities",
        ),
        granularity_sentence=(
            dict(timestamp_granularities=["sentence"], response_format="verbose_json"),
            "timestamp_granularities",
        ),
        granularities_str=(dict(timestamp_granularities="word"), "timestamp_granularities"),
        include=(dict(include=["logprobs"]), "include"),
        chunking_strategy=(dict(chunking_strategy="auto"), "chunking_strategy"),
        response_format=(dict(response_format="docx"), "response_format"),
        diarized=(dict(response_format="diarized_json"), "response_format"),
        temperature_high=(dict(temperature=1.5), "temperature"),
        temperature_nan=(dict(temperature=float("nan")), "temperature"),
        temperature_str=(dict(temperature="hot"), "temperature"),
        prompt_surrogate=(dict(prompt="\ud800"), "prompt"),
        stream_verbose=(dict(stream=True, response_format="verbose_json"), "stream"),
        stream_str=(dict(stream="yes"), "stream"),
        unknown=(dict(frobnicate=1), "frobnicate"),
        model_none=(dict(model=None), "model"),
        model_chat=(dict(model="@local/smollm2-135m-instruct"), "model"),
    )


BAD = bad_audio()


def check(error, param):
    assert type(error) is ingle.BadRequestError, repr(error)
    assert error.status_code == 400 and error.param == param, (error.param, error.message)
    assert error.body["param"] == param and error.type == "invalid_request_error"
    assert param in str(error)


def bad_request(params):
    request = dict(model=MODEL, file=BECKETT)
    request.update(params)
    return request


@pytest.mark.parametrize("name", BAD)
def test_bad_input_names_the_parameter(client, name):
    params, param = BAD[name]
    with pytest.raises(ingle.OpenAIError) as e:
        r = client.audio.transcriptions.create(**bad_request(params))
        list(r)  # a stream: the error comes before any event
    check(e.value, param)
    if name in ("empty", "corrupt_wav", "not_audio"):
        assert "Supported formats:" in e.value.message and "wav" in e.value.message


def test_the_client_works_after_bad_input(client, beckett_json):
    for params, _ in BAD.values():
        with pytest.raises(ingle.BadRequestError):
            client.audio.transcriptions.create(**bad_request(params))
        if "stream" not in params:
            with pytest.raises(ingle.BadRequestError):
                client.audio.transcriptions.create(**bad_request(params), stream=True)
    assert client.audio.transcriptions.create(model=MODEL, file=BECKETT).text == beckett_json.text
    assert wait_idle(client)["active_requests"] == 0


def test_missing_file_and_unknown_model(client):
    with pytest.raises(FileNotFoundError):  # as with openai: the path is read by the client
        client.audio.transcriptions.create(model=MODEL, file=pathlib.Path("/nonexistent.wav"))
    with pytest.raises(ingle.NotFoundError) as e:
        client.audio.transcriptions.create(model="@nobody/whisper", file=BECKETT)
    assert e.value.param == "model"
    still_works(client)


def test_translations_are_refused(client):
    # tiny.en is English-only: it cannot translate, whatever the format (before any decoding).
    for response_format in [ingle.NOT_GIVEN, "text", "verbose_json"]:
        with pytest.raises(ingle.BadRequestError) as e:
            client.audio.translations.create(
                model=MODEL, file=BECKETT, response_format=response_format
            )
        check(e.value, "model")
        assert "English-only" in e.value.message and "cannot translate" in e.value.message
        assert MULTILINGUAL in e.value.message  # what to use instead
    # A model with no transcription predictor cannot serve translations either.
    with pytest.raises(ingle.BadRequestError) as e:
        client.audio.translations.create(model="@local/smollm2-135m-instruct", file=BECKETT)
    check(e.value, "model")
    with pytest.raises(ingle.NotFoundError):
        client.audio.translations.create(model="@nobody/whisper", file=BECKETT)
    with pytest.raises(ingle.BadRequestError) as e:
        client.audio.translations.create(model=MODEL, file=beckett_samples())
    assert e.value.param == "sample_rate"
    still_works(client)


# --- The multilingual Whisper base ----------------------------------------------------------


def translated_from_french(text):
    words = set(normalised(text).split())
    return "coffee" in words and len(words & ENGLISH_WORDS) >= 2 and not words & FRENCH_WORDS


@pytest.mark.parametrize(
    "clip, language, words",
    [
        (FRENCH, "french", ["bonjour", "paris"]),
        (GERMAN, "german", ["guten tag", "deutschland"]),
        (SPANISH, "spanish", ["buenos", "españa"]),
        (BECKETT, "english", ["fail better"]),
    ],
    ids=["fr", "de", "es", "en"],
)
def test_the_language_is_detected_and_reported(client, clip, language, words):
    r = client.audio.transcriptions.create(
        model=MULTILINGUAL, file=clip, response_format="verbose_json"
    )
    assert isinstance(r, ingle.types.TranscriptionVerbose)
    dumped = r.model_dump()
    assert dumped == TranscriptionVerbose.model_validate(dumped).model_dump()
    assert r.task == "transcribe" and r.language == language, (r.language, r.text)
    # The text is in the language heard, not translated.
    for word in words:
        assert word in r.text.lower(), r.text
    assert r.segments and r.usage.type == "duration"


def test_a_given_language_is_the_detected_ones_text(client):
    detected = client.audio.transcriptions.create(
        model=MULTILINGUAL, file=GERMAN, response_format="verbose_json"
    )
    # By code: detection skipped, the same language, so the same text.
    given = client.audio.transcriptions.create(
        model=MULTILINGUAL, file=GERMAN, response_format="verbose_json", language="de"
    )
    assert detected.language == given.language == "german"
    assert given.text == detected.text


def test_languages_refused_naming_language(client):
    # Checked before the audio is decoded: unknown to Whisper, or not English on tiny.en.
    for model, language, says in [
        (MULTILINGUAL, "klingon", "not a language Whisper knows"),
        (MODEL, "fr", "English-only"),
        (MODEL, "french", "English-only"),
    ]:
        for method in (client.audio.transcriptions, client.audio.translations):
            with pytest.raises(ingle.BadRequestError) as e:
                method.create(model=model, file=FRENCH, language=language)
            check(e.value, "language")
            assert says in e.value.message, e.value.message


def test_french_translates_into_english(client):
    r = client.audio.translations.create(model=MULTILINGUAL, file=FRENCH)
    assert isinstance(r, ingle.types.Translation)
    # OpenAI's Translation: the text alone.
    assert r.to_dict() == {"text": r.text} and r.text == r.text.strip()
    assert Translation.model_validate(r.model_dump()).text == r.text
    assert translated_from_french(r.text), r.text
    assert "bonjour" not in r.text.lower(), r.text

    verbose = client.audio.translations.create(
        model=MULTILINGUAL, file=FRENCH, response_format="verbose_json"
    )
    assert isinstance(verbose, ingle.types.TranslationVerbose)
    dumped = verbose.model_dump()
    assert dumped == TranslationVerbose.model_validate(dumped).model_dump()
    # The output's language; no usage, as OpenAI's translation has none.
    assert verbose.task == "translate" and verbose.language == "english"
    assert verbose.text == r.text and "usage" not in dumped
    assert verbose.duration == pytest.approx(FRENCH_SECONDS, abs=0.001) and verbose.segments
    assert "".join(s.text for s in verbose.segments).strip() == verbose.text
    assert isinstance(verbose.segments[0], ingle.types.TranscriptionSegment)
    assert verbose.words is None

    # A translation does not stream.
    with pytest.raises(ingle.BadRequestError) as e:
        client.audio.translations.create(model=MULTILINGUAL, file=FRENCH, stream=True)
    check(e.value, "stream")


def test_breaking_a_stream_stops_the_transcription(client):
    before = wait_idle(client)
    stream = client.audio.transcriptions.create(
        model=MODEL, file=long_audio(), sample_rate=48000, stream=True
    )
    for event in stream:
        assert event.type == "transcript.text.delta"
        break
    after = wait_idle(client)
    assert after["cancelled_requests"] == before["cancelled_requests"] + 1
    # 7 windows; one was decoded before the first delta.
    assert after["generated_tokens"] - before["generated_tokens"] <= 2
    still_works(client)


def test_gil_is_released_while_transcribing(client):
    ticks = 0
    running = True

    def ticker():
        nonlocal ticks
        while running:
            ticks += 1
            time.sleep(0.001)

    samples = samples_of(TWO_CITIES, 48000)
    thread = threading.Thread(target=ticker)
    thread.start()
    start = time.monotonic()
    r = client.audio.transcriptions.create(model=MODEL, file=samples, sample_rate=48000)
    elapsed = time.monotonic() - start
    running = False
    thread.join()
    assert normalised(r.text).startswith("it was the best of times it was the worst of times")
    assert abs(r.usage.seconds - len(samples) / 48000) < 0.001
    assert ticks > elapsed * 1000 * 0.3, (ticks, elapsed)


@pytest.fixture(scope="module")
def aclient():
    # One for the module: loading the model again in each test would cost a second each. It
    # is bound to no event loop, so each test's asyncio.run can use it.
    return ingle.AsyncOpenAI()


def test_async_create_stream_and_errors(aclient, beckett_json):
    async def main():
        transcriptions = aclient.audio.transcriptions
        with open(BECKETT, "rb") as f:
            r = await transcriptions.create(model=MODEL, file=f)
        assert isinstance(r, ingle.types.Transcription) and r.text == beckett_json.text
        r = await transcriptions.create(
            model=MODEL,
            file=beckett_samples(),
            sample_rate=16000,
            response_format="verbose_json",
            timestamp_granularities=["word"],
        )
        assert r.text == beckett_json.text
        check_words(r)
        assert await transcriptions.create(
            model=MODEL, file=BECKETT, response_format="text"
        ) == beckett_json.text + "\n"

        stream = await transcriptions.create(model=MODEL, file=BECKETT, stream=True)
        assert isinstance(stream, ingle.AsyncStream)
        events = [event async for event in stream]
        *deltas, done = events
        assert "".join(e.delta for e in deltas) == done.text == beckett_json.text

        for params, param in [
            (dict(language="de"), "language"),
            (dict(file=b"not audio"), "file"),
            (dict(timestamp_granularities=["word"]), "timestamp_granularities"),
            (dict(include=["logprobs"]), "include"),
            (dict(file=beckett_samples()), "sample_rate"),
        ]:
            with pytest.raises(ingle.BadRequestError) as e:
                await transcriptions.create(**bad_request(params))
            check(e.value, param)
            with pytest.raises(ingle.BadRequestError) as e:
                await transcriptions.create(**bad_request(params), stream=True)
            check(e.value, param)
        with pytest.raises(ingle.BadRequestError) as e:
            await aclient.audio.translations.create(model=MODEL, file=BECKETT)
        check(e.value, "model")
        assert "cannot translate" in e.value.message
        r = await transcriptions.create(model=MODEL, file=BECKETT)
        assert r.text == beckett_json.text

    asyncio.run(main())


def test_async_translation(aclient):
    async def main():
        # Its source language given: no detection.
        r = await aclient.audio.translations.create(
            model=MULTILINGUAL, file=FRENCH, language="fr", response_format="text"
        )
        assert type(r) is str and r.endswith("\n")
        assert translated_from_french(r), r

    asyncio.run(main())


def test_async_cancelling_a_create_stops_the_transcription(aclient):
    async def main():
        samples = long_audio()
        await aclient.audio.transcriptions.create(model=MODEL, file=BECKETT)  # loaded
        before = await aclient.metrics(MODEL)
        task = asyncio.create_task(
            aclient.audio.transcriptions.create(model=MODEL, file=samples, sample_rate=48000)
        )
        # Cancelled once the first of its 7 windows is decoded.
        while (await aclient.metrics(MODEL))["generated_tokens"] == before["generated_tokens"]:
            assert not task.done()
            await asyncio.sleep(0.01)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        while True:
            metrics = await aclient.metrics(MODEL)
            if metrics["active_requests"] == 0:
                break
            assert time.monotonic() - start < 5, metrics
            await asyncio.sleep(0.01)
        assert metrics["cancelled_requests"] == before["cancelled_requests"] + 1
        # Stopped at the end of the window being decoded (the second, or the third if it
        # began before the cancel was seen).
        assert metrics["generated_tokens"] - before["generated_tokens"] <= 3
        r = await aclient.audio.transcriptions.create(model=MODEL, file=BECKETT)
        assert normalised(r.text) == BECKETT_WORDS

    asyncio.run(main())


def test_async_breaking_a_stream_stops_the_transcription(aclient):
    async def main():
        await aclient.audio.transcriptions.create(model=MODEL, file=BECKETT)  # loaded
        before = await aclient.metrics(MODEL)
        stream = await aclient.audio.transcriptions.create(
            model=MODEL, file=long_audio(), sample_rate=48000, stream=True
        )
        async for event in stream:
            assert event.type == "transcript.text.delta"
            break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            metrics = await aclient.metrics(MODEL)
            if metrics["active_requests"] == 0:
                break
            await asyncio.sleep(0.01)
        assert metrics["active_requests"] == 0
        assert metrics["cancelled_requests"] == before["cancelled_requests"] + 1
        assert metrics["generated_tokens"] - before["generated_tokens"] <= 2

    asyncio.run(main())


def test_a_cancelled_stream_stops_while_its_upload_decodes(client):
    # What cancelling an awaited `create(stream=True)` does while the upload decodes (the async
    # client passes a CancelFlag): here the flag is set before the call, so the first check,
    # inside decoding, stops it. The model never gets the audio.
    client.audio.transcriptions.create(model=MODEL, file=BECKETT)  # loaded
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * 16000 * 60)
    before = client.metrics(MODEL)
    cancel = ingle._ingle.CancelFlag()
    cancel.set()
    body = '{"model": "%s", "stream": true}' % MODEL
    with pytest.raises(ingle.APIError) as raised:
        client._native.stream("audio.transcriptions.stream", body, buffer.getvalue(), "a.wav", cancel=cancel)
    assert "cancelled" in str(raised.value), raised.value
    after = client.metrics(MODEL)
    assert after["audio_input_seconds"] == before["audio_input_seconds"], after
    still_works(client)
