"""``ingle.beta.Annotations``: Muna's OpenAI-role annotations (``muna.beta.Annotations``), each
the ingle annotation of the same meaning."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .._annotations import Parameter, _Annotation

__all__ = ["Annotations"]


class Annotations:
    """Muna's names, used as ``Annotated[type, Annotations.X(description=...)]``:

    ===========================  ==========================================================
    ``AudioSpeed``               ``Parameter.AudioSpeed`` (``speed``; min/max default 0.25–4)
    ``AudioVoice``               ``Parameter.AudioVoice`` (``voice``)
    ``ChatAudios``               ``Parameter.ChatAudios`` (the audio parts, at ``sample_rate``)
    ``ChatImages``               ``Parameter.ChatImages`` (the image parts)
    ``ChatMessages``             ``Parameter.ChatMessages`` (``messages``; its
                                 ``context_length`` reported and checked)
    ``ChatTools``                ``Parameter.Tools`` (``tools``)
    ``EmbeddingDims``            ``Parameter.EmbeddingDims`` (``dimensions``; ``max`` left
                                 out is the parameter's default)
    ``FrequencyPenalty``         ``Parameter.FrequencyPenalty``
    ``ImageCount``               ``Parameter.ImageCount`` (``n``)
    ``ImageHeight``              ``Parameter.ImageHeight`` (``size``'s height)
    ``ImageWidth``               ``Parameter.ImageWidth`` (``size``'s width)
    ``MaxOutputTokens``          ``Parameter.MaxTokens`` (``max_tokens`` /
                                 ``max_completion_tokens``)
    ``PresencePenalty``          ``Parameter.PresencePenalty``
    ``ReasoningEffort``          ``Parameter.ReasoningEffort`` (``reasoning_effort``)
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
    def ReasoningEffort(*, description: str = "") -> _Annotation:
        """``reasoning_effort`` (a ``str``, with a default): chat's ``reasoning_effort``,
        Responses' ``reasoning.effort``, Anthropic's ``thinking``."""
        return Parameter.ReasoningEffort(description)

    @staticmethod
    def ChatImages(*, description: str = "") -> _Annotation:
        """The images of the conversation's image parts, in order of appearance."""
        return Parameter.ChatImages(description)

    @staticmethod
    def ChatMessages(*, description: str = "", context_length: Optional[int] = None,
                     batch: Any = None) -> _Annotation:
        """The chat messages; ``context_length``: the tokens the model holds, prompt and answer
        together (reported by ``models``, checked against ``max_tokens``). ``batch`` is Muna's
        and means nothing here: ingle batches a model's requests itself."""
        del batch
        return Parameter.ChatMessages(description, context_length=context_length)

    @staticmethod
    def ChatAudios(*, description: str = "", sample_rate: int) -> _Annotation:
        """The audio of the conversation's audio parts, in order, mono at ``sample_rate``."""
        return Parameter.ChatAudios(description, sample_rate=sample_rate)

    @staticmethod
    def ChatTools(*, description: str = "") -> _Annotation:
        """The request's tools, as OpenAI function tool dicts (``tools``)."""
        return Parameter.Tools(description)

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
