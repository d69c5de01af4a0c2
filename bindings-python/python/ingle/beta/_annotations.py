"""``ingle.beta.Annotations``: Muna's OpenAI-role annotations (``muna.beta.Annotations``), each
the ingle annotation of the same meaning."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .._annotations import Parameter, _Annotation, _Unsupported

__all__ = ["Annotations"]


class Annotations:
    """Muna's names, used as ``Annotated[type, Annotations.X(description=...)]``:

    ===========================  ==========================================================
    ``AudioSpeed``               ``Parameter.AudioSpeed`` (``speed``; min/max default 0.25–4)
    ``AudioVoice``               ``Parameter.AudioVoice`` (``voice``)
    ``EmbeddingDims``            ``Parameter.EmbeddingDims`` (``dimensions``; ``max`` left
                                 out is the parameter's default)
    ``FrequencyPenalty``         ``Parameter.FrequencyPenalty``
    ``ImageCount``               ``Parameter.ImageCount`` (``n``)
    ``ImageHeight``              ``Parameter.ImageHeight`` (``size``'s height)
    ``ImageWidth``               ``Parameter.ImageWidth`` (``size``'s width)
    ``MaxOutputTokens``          ``Parameter.MaxTokens`` (``max_tokens`` /
                                 ``max_completion_tokens``)
    ``PresencePenalty``          ``Parameter.PresencePenalty``
    ``ReasoningEffort``          none: declaring it fails (ingle takes no ``reasoning_effort``)
    ``ResponseFormat``           ``Parameter.ResponseFormat`` (chat ``response_format``)
    ``SamplingProbability``      ``Parameter.TopP`` (``top_p``); also ``TopP``
    ``SamplingTemperature``      ``Parameter.Temperature``; also ``Temperature``
    ``Seed``, ``StopSequences``  ``Parameter.Seed``, ``Parameter.Stop``
    ``TranscriptionLanguage``    ``Parameter.TranscriptionLanguage`` (``language``)
    ``TranscriptionPrompt``      ``Parameter.TranscriptionPrompt`` (``prompt``)
    ``TranscriptionTask``        ``Parameter.TranscriptionTask`` (``transcribe`` or
                                 ``translate``: serves ``audio.translations``)
    ===========================  ==========================================================
    """

    @staticmethod
    def AudioSpeed(*, description: str = "", min: Optional[float] = None,
                   max: Optional[float] = None) -> _Annotation:
        """The speaking speed (``speed``): a ``float`` with a default."""
        return Parameter.AudioSpeed(description, min=0.25 if min is None else min,
                                    max=4.0 if max is None else max)

    @staticmethod
    def AudioVoice(*, description: str = "", voices: Optional[Sequence[str]] = None) -> _Annotation:
        """The voice (``voice``): a required ``Literal`` or ``Enum`` (or ``str`` with ``voices``)."""
        return Parameter.AudioVoice(description, voices=voices)

    @staticmethod
    def EmbeddingDims(*, description: str = "", min: Optional[int] = None,
                      max: Optional[int] = None) -> _Annotation:
        """The number of dimensions (``dimensions``): an ``int`` with a default."""
        return Parameter.EmbeddingDims(description, min=1 if min is None else min, max=max)

    @staticmethod
    def FrequencyPenalty(*, description: str = "", min: Optional[float] = None,
                         max: Optional[float] = None) -> _Annotation:
        """``frequency_penalty`` (``float``, with a default)."""
        return Parameter.FrequencyPenalty(description, min=min, max=max)

    @staticmethod
    def MaxOutputTokens(*, description: str = "", min: Optional[int] = None,
                        max: Optional[int] = None) -> _Annotation:
        """``max_tokens`` / ``max_completion_tokens`` (``int``, with a default)."""
        return Parameter.MaxTokens(description, min=min, max=max)

    @staticmethod
    def PresencePenalty(*, description: str = "", min: Optional[float] = None,
                        max: Optional[float] = None) -> _Annotation:
        """``presence_penalty`` (``float``, with a default)."""
        return Parameter.PresencePenalty(description, min=min, max=max)

    @staticmethod
    def ReasoningEffort(*, description: str = "", **kwargs: Any) -> _Annotation:
        """None in ingle: a predictor declaring it fails, naming the parameter."""
        return _Unsupported(
            "ReasoningEffort",
            "ingle's chat methods take no `reasoning_effort`, so nothing would fill it; "
            "drop the annotation (a Parameter.Generic with a default keeps the parameter) "
            "or steer reasoning with another option",
            description, **kwargs)

    @staticmethod
    def ResponseFormat(*, description: str = "") -> _Annotation:
        """Chat ``response_format`` (``dict``, with a default; ``None`` for none)."""
        return Parameter.ResponseFormat(description)

    @staticmethod
    def SamplingProbability(*, description: str = "", min: Optional[float] = None,
                            max: Optional[float] = None) -> _Annotation:
        """``top_p`` (``float``, with a default)."""
        return Parameter.TopP(description, min=min, max=max)

    @staticmethod
    def SamplingTemperature(*, description: str = "", min: Optional[float] = None,
                            max: Optional[float] = None) -> _Annotation:
        """``temperature`` (``float``, with a default)."""
        return Parameter.Temperature(description, min=min, max=max)

    # Muna's newer names for the same two.
    TopP = SamplingProbability
    Temperature = SamplingTemperature

    @staticmethod
    def ImageWidth(*, description: str = "", min: Optional[int] = None,
                   max: Optional[int] = None) -> _Annotation:
        """The width in pixels of the images to make (``size``): an ``int``."""
        return Parameter.ImageWidth(description, min=min, max=max)

    @staticmethod
    def ImageHeight(*, description: str = "", min: Optional[int] = None,
                    max: Optional[int] = None) -> _Annotation:
        """The height in pixels of the images to make (``size``): an ``int``."""
        return Parameter.ImageHeight(description, min=min, max=max)

    @staticmethod
    def ImageCount(*, description: str = "", min: Optional[int] = None,
                   max: Optional[int] = None) -> _Annotation:
        """How many images to make (``n``): an ``int``."""
        return Parameter.ImageCount(description, min=min, max=max)

    @staticmethod
    def Seed(*, description: str = "") -> _Annotation:
        """``seed`` (``int``, with a default)."""
        return Parameter.Seed(description)

    @staticmethod
    def StopSequences(*, description: str = "") -> _Annotation:
        """``stop`` (a list of strings, with a default)."""
        return Parameter.Stop(description)

    @staticmethod
    def TranscriptionLanguage(*, description: str = "") -> _Annotation:
        """The language of the audio (``language``): a ``str`` with a default; as an output (a
        ``str``), the language heard, reported as ``verbose_json``'s ``language``."""
        return Parameter.TranscriptionLanguage(description)

    @staticmethod
    def TranscriptionPrompt(*, description: str = "") -> _Annotation:
        """Text that conditions a transcription (``prompt``): a ``str`` with a default."""
        return Parameter.TranscriptionPrompt(description)

    @staticmethod
    def TranscriptionTask(*, description: str = "") -> _Annotation:
        """What to write: ``transcribe`` or ``translate`` (into English), a ``str`` with a
        default; a transcription predictor with it serves ``audio.translations``."""
        return Parameter.TranscriptionTask(description)
