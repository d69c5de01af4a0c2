"""What a predictor's parameters mean to the OpenAI methods: the annotations
(``Parameter``), the error a broken signature raises, and ``AudioSamples`` for inputs."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Type, cast

from . import _ingle
from ._values import _raw_audio


class PredictorDefinitionError(TypeError):
    """A predictor's signature breaks a rule: ``function`` and ``param`` name the culprit."""

    def __init__(self, message: str, *, function: str, param: Optional[str] = None) -> None:
        super().__init__(message)
        self.function = function
        self.param = param


class _Annotation:
    """What a parameter means to the OpenAI methods."""

    kind = "generic"

    def __init__(self, description: str = "", *, min: Optional[float] = None,
                 max: Optional[float] = None) -> None:
        self.description = description
        self.min = min
        self.max = max

    def _fields(self) -> Dict[str, Any]:
        return {}

    def _json(self) -> Any:
        fields = self._fields()
        return {"type": self.kind, **fields} if fields else self.kind

    def __repr__(self) -> str:
        return f"Parameter.{type(self).__name__}({self.description!r})"


def _annotation(kind: str, doc: str, base: Type[_Annotation] = _Annotation) -> Type[_Annotation]:
    # `type()` is typed as making a plain `type`: it makes a subclass of `base`.
    made = type(kind.title().replace("_", ""), (base,), {"kind": kind, "__doc__": doc})
    return cast(Type[_Annotation], made)


class _Bounded(_Annotation):
    def _fields(self) -> Dict[str, Any]:
        return {"min": self.min, "max": self.max}


class _EmbeddingDims(_Bounded):
    """The number of dimensions to return (``dimensions``): an ``int`` with a default.
    ``max`` left out is the default (the model's full size)."""

    kind = "embedding_dims"

    def __init__(self, description: str = "", *, min: int = 1, max: Optional[int] = None) -> None:
        super().__init__(description, min=1 if min is None else min, max=max)


class _AudioVoice(_Annotation):
    """The voice (``voice``): a required ``Literal``/``Enum`` (or ``str`` with ``voices``)."""

    kind = "audio_voice"

    def __init__(self, description: str = "", *, voices: Optional[Sequence[str]] = None) -> None:
        super().__init__(description)
        self.voices = None if voices is None else [str(v) for v in voices]

    def _fields(self) -> Dict[str, Any]:
        return {"voices": self.voices}


class _AudioSpeed(_Bounded):
    """The speaking speed (``speed``): a ``float`` with a default."""

    kind = "audio_speed"

    def __init__(self, description: str = "", *, min: float = 0.25, max: float = 4.0) -> None:
        super().__init__(description, min=min, max=max)


class _Audio(_Annotation):
    """Audio: float32 samples as a NumPy array at ``sample_rate``: ``(F,)`` mono, or ``(F, C)``
    or ``(C, F)`` (the shape decides: at most 64 channels, fewer than the frames)."""

    kind = "audio"

    def __init__(self, description: str = "", *, sample_rate: int) -> None:
        super().__init__(description)
        self.sample_rate = int(sample_rate)

    def _fields(self) -> Dict[str, Any]:
        return {"sample_rate": self.sample_rate}


class _ChatAudios(_Annotation):
    """The audio of the chat's audio parts (``input_audio``), in order: a ``list`` of float32
    mono NumPy arrays at ``sample_rate``."""

    kind = "chat_audios"

    def __init__(self, description: str = "", *, sample_rate: int) -> None:
        super().__init__(description)
        self.sample_rate = int(sample_rate)

    def _fields(self) -> Dict[str, Any]:
        return {"sample_rate": self.sample_rate}


class _ChatMessages(_Annotation):
    """The chat messages (``messages``); also found by its type hint. A message with images or
    audio has a list of parts: ``{'type': 'text', 'text'}``, ``{'type': 'image'}``,
    ``{'type': 'audio'}``. ``context_length``: the most tokens the model holds, prompt and
    answer together, reported by ``models`` and checked against ``max_tokens`` (the prompt's
    length is the predictor's to check)."""

    kind = "chat_messages"

    def __init__(self, description: str = "", *, context_length: Optional[int] = None) -> None:
        super().__init__(description)
        if context_length is not None and (isinstance(context_length, bool) or not isinstance(context_length, int)):
            raise TypeError(f"ChatMessages(context_length=...) must be an int, not {type(context_length).__name__}")
        self.context_length = context_length

    def _fields(self) -> Dict[str, Any]:
        return {} if self.context_length is None else {"context_length": self.context_length}


class _Unsupported(_Annotation):
    """An annotation another library has and ingle does not: using it fails at registration
    (naming the parameter) rather than doing nothing."""

    kind = "unsupported"

    def __init__(self, name: str, why: str, description: str = "", **_: Any) -> None:
        super().__init__(description)
        self.name = name
        self.why = why

    def __repr__(self) -> str:
        return f"Annotations.{self.name}({self.description!r})"


class Parameter:
    """The annotations of predictor parameters, used as ``Annotated[type, Parameter.X(...)]``."""

    Generic = _annotation("generic", "No special meaning; ``min``/``max`` bound a number.")
    Numeric = _annotation("generic", "A number between ``min`` and ``max``.")
    Embedding = _annotation(
        "embedding", "The texts to embed (``list[str]``), or the float32 ``(N, D)`` output.")
    EmbeddingDims = _EmbeddingDims
    AudioVoice = _AudioVoice
    AudioSpeed = _AudioSpeed
    Audio = _Audio
    TranscriptionLanguage = _annotation(
        "transcription_language",
        "The language of the audio (``language``, an input ``str``); as an output (a ``str``), "
        "the language the predictor heard, reported as ``verbose_json``'s ``language``.")
    TranscriptionPrompt = _annotation(
        "transcription_prompt", "Text that conditions a transcription (``prompt``).")
    TranscriptionTask = _annotation(
        "transcription_task",
        "What to write (an input ``str``): ``transcribe`` (the speech in its own language) or "
        "``translate`` (into English); a transcription predictor with it serves "
        "``audio.translations``, which passes ``translate``.")
    TranscriptionWordTimestamps = _annotation(
        "transcription_word_timestamps", "Whether to time each word (``bool``).")
    TranscriptionSegment = _annotation(
        "transcription_segment", "One segment ``{id, start, end, text, ...}`` (an output).")
    ChatMessages = _ChatMessages
    ChatImages = _annotation(
        "chat_images",
        "The images of the chat's image parts, in order: a ``list`` of ``PIL.Image.Image`` "
        "(``list[np.ndarray]``, or a plain ``list`` without Pillow: ``(H, W, C)`` uint8 arrays).")
    ChatAudios = _ChatAudios
    ReasoningEffort = _annotation(
        "reasoning_effort",
        "``reasoning_effort`` (a ``str``: none, minimal, low, medium, high or xhigh), with a "
        "default.")
    ReasoningDelta = _annotation(
        "reasoning_delta",
        "Thinking since the previous output (an output ``str``), shown apart from the answer.")
    Prompt = _annotation("prompt", "The text to continue (``completions``' ``prompt``).")
    RerankQuery = _annotation("rerank_query", "The query documents are ranked against (``str``).")
    RerankDocuments = _annotation(
        "rerank_documents", "The documents to rank (``list[str]``).")
    RerankScores = _annotation(
        "rerank_scores",
        "One relevance score per document, higher is more relevant (an output ``list[float]``);"
        " with ``RerankQuery`` and ``RerankDocuments`` it makes the predictor serve ``rerank``.")
    ImageWidth = _annotation(
        "image_width", "The width in pixels of the images to make (``int``, from ``size``).")
    ImageHeight = _annotation(
        "image_height", "The height in pixels of the images to make (``int``, from ``size``).")
    ImageCount = _annotation(
        "image_count",
        "How many images to make (``int``, ``n``); with ``ImageWidth`` or ``ImageHeight`` it "
        "makes the predictor serve ``images.generate``: a ``str`` prompt in, ``(H, W, C)`` uint8 "
        "arrays out (C = 1, 3 or 4; a list of them, or an ``(N, H, W, C)`` array).")
    MaxTokens = _annotation("max_tokens", "``max_tokens`` / ``max_completion_tokens`` (int).")
    Temperature = _annotation("temperature", "``temperature`` (float).")
    TopP = _annotation("top_p", "``top_p`` (float).")
    Stop = _annotation("stop", "``stop``: a list of strings.")
    Seed = _annotation("seed", "``seed`` (int).")
    FrequencyPenalty = _annotation("frequency_penalty", "``frequency_penalty`` (float).")
    PresencePenalty = _annotation("presence_penalty", "``presence_penalty`` (float).")
    TopK = _annotation("top_k", "``top_k``, llama.cpp's extension (int; 0: off).")
    MinP = _annotation("min_p", "``min_p``, llama.cpp's extension (float, 0–1).")
    RepetitionPenalty = _annotation(
        "repetition_penalty",
        "``repetition_penalty`` (llama.cpp's ``repeat_penalty``; float, 1: off).")
    ChatTemplateKwargs = _annotation(
        "chat_template_kwargs", "``chat_template_kwargs``: extra chat-template variables (dict).")
    Tools = _annotation("tools", "``tools``: the function tools the model may call (a list).")
    ChatTools = Tools
    ToolChoice = _annotation(
        "tool_choice", "``tool_choice``, always a dict: ``{'type': 'auto'}``, ... (dict).")
    ParallelToolCalls = _annotation("parallel_tool_calls", "``parallel_tool_calls`` (bool).")
    AllowRepeatedToolCalls = _annotation(
        "allow_repeated_tool_calls",
        "``allow_repeated_tool_calls`` (ingle's): a tool call may repeat one made earlier in the "
        "reply or already answered since the user spoke (bool).")
    ResponseFormat = _annotation("response_format", "``response_format`` (dict).")
    Logprobs = _annotation(
        "logprobs", "How many alternatives to report with each token's log probability (int).")
    LogitBias = _annotation("logit_bias", "``logit_bias``: token id → bias (dict).")
    ToolCalls = _annotation(
        "tool_calls", "Tool-call deltas since the previous output, as OpenAI streams them (an output list).")
    TokenLogprobs = _annotation(
        "token_logprobs", "``{token, logprob, bytes, top_logprobs}`` per token (an output list).")


class AudioSamples:
    """Audio for ``predictions.create`` inputs: float32 ``samples`` (``(F,)``, or ``(F, C)``
    or ``(C, F)`` as the shape decides) at ``sample_rate``."""

    def __init__(self, samples: Any, sample_rate: int) -> None:
        self.samples = samples
        self.sample_rate = int(sample_rate)

    def _raw(self, what: str) -> _ingle.RawAudio:
        return _raw_audio(self.samples, self.sample_rate, what)
