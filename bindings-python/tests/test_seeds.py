"""The predictors of the documents ingle was started from (Muna's guides, kept in the shared
seeds/), registered as a user copies them: verbatim but for the imports and the decorator
(Muna's `@compile(...)` is ingle's `@predictor(tag=...)`), with a body where the documents
write `...`. Then code written for `muna.beta.Annotations` and `muna.beta.openai`, with only
its imports changed."""

import io
import wave
from typing import Annotated, Iterator, Literal

import numpy as np
import pytest

import ingle
from ingle import Parameter, PredictorDefinitionError, predictor

# --- Seed 000, "Creating Embedding Predictors" --------------------------------------------

from numpy import ndarray


def vectors(texts, dims):
    """Deterministic float32 rows, one per text: what the seed's `...` stands for."""
    rows = [np.random.default_rng(sum(t.encode())).standard_normal(dims) for t in texts]
    return np.asarray(rows, dtype=np.float32)


# Step 2: texts annotated Generic, the Embedding output.
@predictor(tag="@seed/embed-text")
def embed_text(
    texts: Annotated[
        list[str],
        Parameter.Generic(description="Input texts to embed.")
    ]
) -> Annotated[
    ndarray,
    Parameter.Embedding(description="Embedding matrix.")
]:
    return vectors(texts, 8)


# Step 3: with Matryoshka dimensions.
@predictor(tag="@seed/embed-text-dims")
def embed_text_dims(
    texts: Annotated[
        list[str],
        Parameter.Generic(description="Input texts to embed.")
    ],
    dimensions: Annotated[
        int,
        Parameter.EmbeddingDims(
            description="The number of dimensions the embeddings should have.",
            min=256,
            max=768
        )
    ] = 768
) -> Annotated[
    ndarray,
    Parameter.Embedding(description="Embedding matrix.")
]:
    return vectors(texts, 768)[:, :dimensions]


# Seed 001 writes the texts as a plain `list[str]`.
@predictor(tag="@seed/embed-plain")
def embed_plain(texts: list[str]) -> Annotated[ndarray, Parameter.Embedding()]:
    return vectors(texts, 4)


# --- Seed 000, "Creating Speech Predictors" -----------------------------------------------

RATE = 24_000
FRAMES = RATE // 10


def stereo_tone(voice):
    """(C, F): channels first, as seed 000 allows; a 220 Hz left channel, the right silent
    for voice_a and at 880 Hz for voice_b."""
    t = np.arange(FRAMES) / RATE
    right = 0.0 * t if voice == "voice_a" else 0.25 * np.sin(2 * np.pi * 880 * t)
    return np.stack([0.5 * np.sin(2 * np.pi * 220 * t), right]).astype(np.float32)


# Step 4: text, the voice, the speed; the Audio output.
@predictor(tag="@seed/generate-speech")
def generate_speech(
    text: Annotated[str, Parameter.Generic(description="Input text.")],
    voice: Annotated[
        Literal["voice_a", "voice_b"],
        Parameter.AudioVoice(description="Voice to use in generating audio.")
    ],
    speed: Annotated[
        float,
        Parameter.AudioSpeed(
            description="The speed of the generated audio.",
            min=0.25,
            max=4.0
        )
    ] = 1.0
) -> Annotated[
    ndarray,
    Parameter.Audio(description="Generated speech.", sample_rate=24_000)
]:
    return stereo_tone(voice)


SHAPES = {
    "mono": (FRAMES,),
    "frames_first": (FRAMES, 2),  # seed 001: (F, C), interleaved
    "channels_first": (2, FRAMES),  # seed 000: (C, F)
    "one_frame_per_channel": (1, 1),
    "square": (2, 2),  # ambiguous
    "wide": (100, 200),  # more than 64 channels either way
}


def shaped(layout):
    shape = SHAPES[layout]
    return (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) % 7) / 10


@predictor(tag="@seed/layouts")
def layouts(
    text: str,
    voice: Annotated[Literal[tuple(SHAPES)], Parameter.AudioVoice()],
) -> Annotated[ndarray, Parameter.Audio(sample_rate=RATE)]:
    return shaped(voice)


# --- Muna's code with only its imports changed --------------------------------------------

from ingle.beta import Annotations
from ingle.beta.openai import ChatCompletionChunk, DeltaMessage, Message, StreamChoice

seen = {}


@predictor(tag="@beta/chat")
def gpt_oss_20b(
    messages: Annotated[
        list[Message],
        Parameter.Generic(description="Messages comprising the chat conversation so far.")
    ],
    *,
    response_format: Annotated[
        dict,
        Annotations.ResponseFormat(description="Format specification to use in response.")
    ]=None,
    max_output_tokens: Annotated[
        int,
        Annotations.MaxOutputTokens(description="Maximum number of tokens in the response.")
    ]=5_000,
    temperature: Annotated[float, Annotations.SamplingTemperature(
        description="Sampling temperature (randomness).",
        min=0.0,
        max=2.0
    )]=1.0,
    top_p: Annotated[float, Annotations.SamplingProbability(
        description="Sampling probability for token selection.",
        min=0.0,
        max=1.0
    )]=1.0,
    presence_penalty: Annotated[float, Annotations.PresencePenalty(
        description="Penalty for tokens that have already appeared.",
        min=0.0,
        max=2.0
    )]=0.0,
    frequency_penalty: Annotated[float, Annotations.FrequencyPenalty(
        description="Penalty for tokens based on their frequency.",
        min=0.0,
        max=2.0
    )]=0.0
) -> Iterator[ChatCompletionChunk]:
    seen["chat"] = dict(
        role=messages[-1].role, response_format=response_format,
        max_output_tokens=max_output_tokens, temperature=temperature, top_p=top_p,
        presence_penalty=presence_penalty, frequency_penalty=frequency_penalty)
    for word in messages[-1].content.split():
        yield ChatCompletionChunk(
            id="x", object="chat.completion.chunk", created=0, model="m",
            choices=[StreamChoice(index=0, delta=DeltaMessage(content=word + " "))])


@predictor(tag="@beta/embeddings")
def embedding_model(
    texts: Annotated[
        list[str],
        Parameter.Generic(description="Input texts to embed.")
    ],
    *,
    dimensions: Annotated[int, Annotations.EmbeddingDims(
        description="Embedding dimensions.",
        min=32,
        max=1024
    )]=1024
) -> Annotated[
    ndarray,
    Parameter.Embedding(description="Embedding matrix.")
]:
    return vectors(texts, dimensions)


@predictor(tag="@beta/embeddings-no-max")
def embedding_no_max(
    texts: list[str],
    *,
    dimensions: Annotated[int, Annotations.EmbeddingDims(description="Embedding dimensions.")]=16
) -> Annotated[ndarray, Parameter.Embedding(description="Embedding matrix.")]:
    return vectors(texts, dimensions)


GenerationVoice = Literal["af", "af_bella", "bm_lewis"]


@predictor(tag="@beta/kokoro")
def kokoro_tts(
    text: Annotated[
        str,
        Parameter.Generic(description="Text to generate speech from")
    ],
    *,
    voice: Annotated[
        GenerationVoice,
        Annotations.AudioVoice(description="Generation voice.")
    ],
    language: Annotated[
        Literal["en-US", "en-GB"],
        Parameter.Generic(description="Generation language.")
    ]="en-US",
    speed: Annotated[float, Annotations.AudioSpeed(
        description="Voice speed multiplier.",
        min=0.5,
        max=2.0
    )]=1.0
) -> Annotated[ndarray, Parameter.Audio(
    description="Linear PCM audio samples with shape (F,) and sample rate 24KHz.",
    sample_rate=RATE
)]:
    seen["speech"] = dict(voice=voice, language=language, speed=speed)
    return np.zeros(int(FRAMES / speed), dtype=np.float32)


@predictor(tag="@beta/transcribe")
def transcribe(
    audio: Annotated[ndarray, Parameter.Audio(description="Input audio.", sample_rate=16_000)],
    language: Annotated[str, Annotations.TranscriptionLanguage(description="Audio language.")]="en",
    prompt: Annotated[str, Annotations.TranscriptionPrompt(description="Prompt.")]="",
) -> str:
    seen["transcription"] = dict(language=language, prompt=prompt, frames=len(audio))
    return "heard"


@pytest.fixture(scope="module")
def seeds(client):
    client.predictors.register(embed_text, embed_text_dims, embed_plain, generate_speech, layouts,
                               gpt_oss_20b, embedding_model, embedding_no_max, kokoro_tts,
                               transcribe)
    return client


# --- The seeds' examples --------------------------------------------------------------------


def test_the_seeds_embedding_predictors_serve_embeddings_create(seeds):
    r = seeds.embeddings.create(model="@seed/embed-text", input=["alpha", "beta"])
    assert [d.index for d in r.data] == [0, 1]
    assert np.allclose(r.data[1].embedding, vectors(["beta"], 8)[0], atol=1e-6)
    r = seeds.embeddings.create(model="@seed/embed-text-dims", input="alpha")
    assert len(r.data[0].embedding) == 768
    r = seeds.embeddings.create(model="@seed/embed-text-dims", input=["alpha", "b"], dimensions=256)
    assert [len(d.embedding) for d in r.data] == [256, 256]
    assert np.allclose(r.data[0].embedding, vectors(["alpha"], 768)[0, :256], atol=1e-6)
    with pytest.raises(ingle.BadRequestError) as e:
        seeds.embeddings.create(model="@seed/embed-text-dims", input="alpha", dimensions=100)
    assert e.value.param == "dimensions" and "between 256 and 768" in e.value.message
    r = seeds.embeddings.create(model="@seed/embed-plain", input="alpha")
    assert len(r.data[0].embedding) == 4
    # The texts keep the name the caller knows them by in errors.
    with pytest.raises(ingle.BadRequestError) as e:
        seeds.embeddings.create(model="@seed/embed-text", input=["a", 1])
    assert e.value.param == "input[1]"


def test_the_seeds_speech_predictor_serves_audio_speech_create(seeds):
    r = seeds.audio.speech.create(model="@seed/generate-speech", voice="voice_b", input="Hi",
                                  response_format="wav")
    # Seed 000's (C, F) is read as two channels of FRAMES frames, not FRAMES channels.
    assert r.sample_rate == RATE and r.channels == 2
    assert np.array_equal(r.to_numpy(), stereo_tone("voice_b").T)
    with wave.open(io.BytesIO(r.content)) as w:  # encoded as mono, the channels averaged
        assert (w.getnchannels(), w.getframerate(), w.getnframes()) == (1, RATE, FRAMES)
    # OpenAI's voice names map to the first voice.
    r = seeds.audio.speech.create(model="@seed/generate-speech", voice="alloy", input="Hi",
                                  response_format="pcm", speed=2.0)
    assert len(r.content) == 2 * FRAMES


def test_audio_is_frames_first_or_channels_first_as_its_shape_decides(seeds):
    def samples(layout):
        return seeds.audio.speech.create(model="@seed/layouts", voice=layout, input="x",
                                         response_format="pcm").to_numpy()

    assert np.array_equal(samples("mono"), shaped("mono"))
    assert np.array_equal(samples("frames_first"), shaped("frames_first"))
    assert np.array_equal(samples("channels_first"), shaped("channels_first").T)
    assert samples("one_frame_per_channel").shape == (1,)
    for layout, words in [("square", "(2, 2), which is ambiguous"),
                          ("wide", "more than 64 channels")]:
        with pytest.raises(ingle.InternalServerError) as e:
            samples(layout)
        message = str(e.value)
        assert "`@seed/layouts`" in message and "the output `output`" in message, message
        assert words in message, message
    # predictions give the interleaved samples and their channels.
    p = seeds.predictions.create(tag="@seed/layouts", inputs={"text": "x", "voice": "channels_first"})
    assert p.results[0]["channels"] == 2
    p = seeds.predictions.create(tag="@seed/layouts", inputs={"text": "x", "voice": "square"})
    assert "ambiguous" in p.error["message"]


def test_audio_inputs_take_either_layout_too(seeds):
    t = np.linspace(-1, 1, 1600, dtype=np.float32)
    stereo = np.stack([t, -t])  # (C, F)
    p = seeds.predictions.create(tag="@beta/transcribe", inputs={
        "audio": ingle.AudioSamples(stereo, 16_000)})
    assert p.results == ["heard"] and seen["transcription"]["frames"] == 1600
    with pytest.raises(ingle.BadRequestError) as e:
        seeds.predictions.create(tag="@beta/transcribe", inputs={
            "audio": ingle.AudioSamples(np.zeros((3, 3), np.float32), 16_000)})
    assert e.value.param == "audio" and "ambiguous" in e.value.message


# --- muna.beta's names ----------------------------------------------------------------------


def test_beta_names_are_ingles_annotations():
    assert ingle.beta.Annotations is Annotations
    assert ingle.beta.openai.Message is ingle.types.ChatCompletionMessage
    assert ingle.beta.openai.ChatCompletionChunk is ingle.types.ChatCompletionChunk
    from ingle.beta.openai import Annotations as AlsoHere  # where muna 0.0.7x had them

    assert AlsoHere is Annotations
    pairs = [("AudioSpeed", "audio_speed"), ("AudioVoice", "audio_voice"),
             ("EmbeddingDims", "embedding_dims"), ("FrequencyPenalty", "frequency_penalty"),
             ("MaxOutputTokens", "max_tokens"), ("PresencePenalty", "presence_penalty"),
             ("ResponseFormat", "response_format"), ("SamplingProbability", "top_p"),
             ("SamplingTemperature", "temperature"), ("TranscriptionLanguage", "transcription_language"),
             ("TranscriptionPrompt", "transcription_prompt")]
    for name, kind in pairs:
        assert getattr(Annotations, name)(description="d").kind == kind, name


def test_beta_chat_options_reach_the_function(seeds):
    r = seeds.chat.completions.create(
        model="@beta/chat", messages=[{"role": "user", "content": "one two"}], max_tokens=7,
        temperature=0.25, top_p=0.5, presence_penalty=0.125, frequency_penalty=0.375,
        response_format={"type": "json_object"})
    assert r.choices[0].message.content == "one two "
    assert seen["chat"] == dict(role="user", response_format={"type": "json_object"},
                                max_output_tokens=7, temperature=0.25, top_p=0.5,
                                presence_penalty=0.125, frequency_penalty=0.375)
    with pytest.raises(ingle.BadRequestError) as e:
        seeds.chat.completions.create(model="@beta/chat", messages=[{"role": "user", "content": "a"}],
                                      temperature=2.5)
    assert e.value.param == "temperature"


def test_beta_embeddings_speech_and_transcription(seeds):
    r = seeds.embeddings.create(model="@beta/embeddings", input=["a", "b"], dimensions=64)
    assert [len(d.embedding) for d in r.data] == [64, 64]
    with pytest.raises(ingle.BadRequestError) as e:
        seeds.embeddings.create(model="@beta/embeddings", input="a", dimensions=2048)
    assert e.value.param == "dimensions" and "between 32 and 1024" in e.value.message
    # EmbeddingDims without `max`: its default is the most there are.
    assert len(seeds.embeddings.create(model="@beta/embeddings-no-max", input="a").data[0].embedding) == 16
    with pytest.raises(ingle.BadRequestError) as e:
        seeds.embeddings.create(model="@beta/embeddings-no-max", input="a", dimensions=17)
    assert e.value.param == "dimensions" and "between 1 and 16" in e.value.message

    r = seeds.audio.speech.create(model="@beta/kokoro", voice="bm_lewis", input="Hi", speed=2.0,
                                  response_format="pcm")
    assert seen["speech"] == dict(voice="bm_lewis", language="en-US", speed=2.0)
    assert len(r.content) == 2 * (FRAMES // 2)
    with pytest.raises(ingle.BadRequestError) as e:
        seeds.audio.speech.create(model="@beta/kokoro", voice="af", input="Hi", speed=3.0)
    assert e.value.param == "speed"

    t = seeds.audio.transcriptions.create(model="@beta/transcribe", file=np.zeros(8000, np.float32),
                                          sample_rate=16_000, language="fr", prompt="Bonjour.")
    assert t.text == "heard"
    assert seen["transcription"] == dict(language="fr", prompt="Bonjour.", frames=8000)


def test_reasoning_effort_reaches_the_predictor_and_its_thinking_comes_back_apart():
    """Muna's ReasoningEffort and a chunk with `reasoning_content`, as Muna's newer predictors
    write them."""
    def thinks(
        messages: list[Message],
        reasoning_effort: Annotated[
            Literal["low", "medium", "high"],
            Annotations.ReasoningEffort(description="Reasoning effort.")
        ] = "medium",
    ) -> Iterator[ChatCompletionChunk]:
        yield ChatCompletionChunk(choices=[StreamChoice(
            index=0, delta=DeltaMessage(reasoning_content=f"thinking {reasoning_effort}. "))])
        yield ChatCompletionChunk(choices=[StreamChoice(
            index=0, delta=DeltaMessage(content=messages[-1].content))])

    client = ingle.OpenAI(predictors=[predictor(tag="@beta/thinks")(thinks)])
    r = client.chat.completions.create(model="@beta/thinks", reasoning_effort="high",
                                       messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.reasoning_content == "thinking high. "
    assert r.choices[0].message.content == "hi"
    with pytest.raises(ingle.BadRequestError) as e:
        client.chat.completions.create(model="@beta/thinks", reasoning_effort="minimal",
                                       messages=[{"role": "user", "content": "hi"}])
    assert e.value.param == "reasoning_effort"
