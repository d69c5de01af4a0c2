"""``client.audio``: speech, transcriptions and translations, written once for ``OpenAI`` and
``AsyncOpenAI`` (see `_base`)."""

from __future__ import annotations

import json
import os
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

from . import _arguments, _ingle
from ._arguments import NOT_GIVEN, REQUIRED
from ._base import (
    _Awaited,
    M,
    Async,
    AsyncStream,
    Stream,
    Sync,
    _Call,
    _direct,
    _either,
    _in_thread,
    _method,
    _Resource,
    _streamed,
    _whole,
)
from ._response import (
    AsyncResponseContextManager,
    AsyncStreamedBinaryAPIResponse,
    HttpxBinaryResponseContent,
    ResponseContextManager,
    StreamedBinaryAPIResponse,
)
from .types import (
    Transcription,
    TranscriptionStreamEvent,
    TranscriptionVerbose,
    Translation,
    TranslationVerbose,
    _TranscriptionStreamEvents,
)


ResponseFormat = Literal["mp3", "opus", "aac", "flac", "wav", "pcm"]
StreamFormat = Literal["sse", "audio"]


def _speech_body(
    model: Any,
    input: Any,
    voice: Any,
    instructions: Any,
    response_format: Any,
    speed: Any,
    stream_format: Any,
    extra: Dict[str, Any],
) -> str:
    params = dict(
        model=model,
        input=input,
        voice=voice,
        instructions=instructions,
        response_format=response_format,
        speed=speed,
        stream_format=stream_format,
    )
    params.update(extra)
    return _arguments.speech(params)


def _binary_content(
    result: Union[Tuple[bytes, str, bytes, int, int], Tuple[bytes, str]],
) -> HttpxBinaryResponseContent:
    """Speech's answer: the file and the samples it was encoded from, or SSE events alone."""
    if len(result) == 2:
        return HttpxBinaryResponseContent(result[0], result[1], None, 0, 0)
    return HttpxBinaryResponseContent(*result)


class Speech(_Resource[M]):
    """``client.audio.speech``: text to speech."""

    def __init__(self, native: _ingle.NativeClient, mode: Type[M]) -> None:
        super().__init__(native, mode)
        self.with_streaming_response = SpeechWithStreamingResponse(native, mode)

    @_method
    def create(
        self, /,
        *,
        input: str = REQUIRED,
        model: str = REQUIRED,
        voice: str = REQUIRED,
        instructions: str = NOT_GIVEN,
        response_format: ResponseFormat = NOT_GIVEN,
        speed: float = NOT_GIVEN,
        stream_format: StreamFormat = NOT_GIVEN,
        **extra: Any,
    ) -> _Call[HttpxBinaryResponseContent, HttpxBinaryResponseContent]:
        """Speaks ``input`` (1 to 4096 characters) with ``model`` (such as
        ``"@local/piper-en-us-joe-medium"``) in ``voice`` (one of the model's, or any OpenAI
        voice name: ``alloy``, ``ash``, ... map to the model's default). ``response_format``:
        ``mp3`` (default), ``opus``, ``aac``, ``flac``, ``wav`` or ``pcm`` (raw 16-bit
        little-endian mono at 24 kHz); ``speed``: 0.25 to 4.0; ``stream_format="sse"`` makes
        the content server-sent events of base64 audio. ``instructions`` are refused by models
        that cannot follow them (all local ones so far).

        Returns the whole file once synthesised (the GIL is released meanwhile), and the
        samples it was encoded from: ``r.write_to_file(path)``, ``r.content``,
        ``r.to_numpy()`` at ``r.sample_rate``. Ctrl-C (in AsyncOpenAI, cancelling the awaiting
        task) stops the synthesis before its next sentence; for audio as it is produced, use
        ``with_streaming_response.create(...)``."""
        body = _speech_body(
            model, input, voice, instructions, response_format, speed, stream_format, extra
        )
        return _whole(_binary_content, self._native.call, "audio.speech.create", body)


class SpeechWithStreamingResponse(_Resource[M]):
    """``client.audio.speech.with_streaming_response``."""

    @_direct
    def create(
        self, /,
        *,
        input: str = REQUIRED,
        model: str = REQUIRED,
        voice: str = REQUIRED,
        instructions: str = NOT_GIVEN,
        response_format: ResponseFormat = NOT_GIVEN,
        speed: float = NOT_GIVEN,
        stream_format: StreamFormat = NOT_GIVEN,
        **extra: Any,
    ) -> _Call[
        ResponseContextManager[StreamedBinaryAPIResponse],
        AsyncResponseContextManager[AsyncStreamedBinaryAPIResponse],
    ]:
        """``Speech.create``'s arguments; the audio comes as it is synthesised, a sentence at a
        time::

            with client.audio.speech.with_streaming_response.create(
                model=..., voice="alloy", input=text, response_format="wav"
            ) as response:
                response.stream_to_file("speech.wav")   # or: for chunk in response.iter_bytes()

        The request starts when the ``with`` block is entered (a bad argument raises there);
        leaving it stops synthesis. In AsyncOpenAI: ``async with ... as response: async for
        chunk in response.iter_bytes(): ...``, each chunk awaited in a worker thread; leaving
        the block, or cancelling the task, stops synthesis."""
        native = self._native

        def body() -> str:
            return _speech_body(
                model, input, voice, instructions, response_format, speed, stream_format, extra
            )

        def request() -> StreamedBinaryAPIResponse:
            return StreamedBinaryAPIResponse(native.stream("audio.speech.stream", body()))

        async def request_async() -> AsyncStreamedBinaryAPIResponse:
            speech = await _in_thread(native.stream, "audio.speech.stream", body())
            return AsyncStreamedBinaryAPIResponse(speech)

        return _either(
            lambda: ResponseContextManager(request), lambda: AsyncResponseContextManager(request_async)
        )


FileContent = Union[IO[bytes], bytes, "os.PathLike[str]"]
FileTypes = Union[
    FileContent,
    Tuple[Optional[str], FileContent],
    Tuple[Optional[str], FileContent, Optional[str]],
    Tuple[Optional[str], FileContent, Optional[str], Mapping[str, str]],
    Any,  # a NumPy array of samples, with `sample_rate`
]
"""``file`` of ``audio.transcriptions.create``: as ``openai`` takes it, or a NumPy array."""
TranscriptionFormat = Literal["json", "text", "srt", "verbose_json", "vtt"]
Granularity = Literal["word", "segment"]
Text = TypeVar("Text", Transcription, Translation)
Verbose = TypeVar("Verbose", TranscriptionVerbose, TranslationVerbose)


def _transcription_body(params: Dict[str, Any], extra: Dict[str, Any]) -> str:
    params = dict(params)
    for name in ("self", "file", "sample_rate", "stream", "extra"):
        params.pop(name, None)
    params.update(extra)
    return _arguments.transcription(params)


def _upload(
    function: Callable[..., Any], method: str, body: str, file: Any, sample_rate: Optional[int]
) -> Callable[..., Any]:
    """``function`` (the native ``call`` or ``stream``) of ``method`` on the request and
    ``file``'s audio, read and decoded where the call runs: in AsyncOpenAI, in the worker
    thread, where cancelling the awaiting task stops it."""
    return lambda **cancel: function(method, body, *_arguments.audio_file(file, sample_rate), **cancel)


def _text_in(
    text: Type[Text], verbose: Type[Verbose], body: str
) -> Callable[[str], Union[Text, Verbose, str]]:
    """How to read a transcription's (or translation's) answer in the ``response_format`` its
    request ``body`` asks for (``extra_body`` included): ``text`` for ``json`` (the default),
    ``verbose`` for ``verbose_json``, and for ``text``, ``srt`` and ``vtt`` the body as a
    ``str``, as ``openai`` returns them."""
    asked = json.loads(body).get("response_format") or "json"

    def read(answer: str) -> Union[Text, Verbose, str]:
        if asked == "json":
            return text.construct(json.loads(answer))
        if asked == "verbose_json":
            return verbose.construct(json.loads(answer))
        return answer

    return read


def _transcriptions_create(
    self: _Resource[Any],
    *,
    file: FileTypes = REQUIRED,
    model: str = REQUIRED,
    chunking_strategy: Any = NOT_GIVEN,
    include: List[str] = NOT_GIVEN,
    language: str = NOT_GIVEN,
    prompt: str = NOT_GIVEN,
    response_format: TranscriptionFormat = NOT_GIVEN,
    stream: Optional[bool] = NOT_GIVEN,
    temperature: float = NOT_GIVEN,
    timestamp_granularities: List[Granularity] = NOT_GIVEN,
    sample_rate: Optional[int] = None,
    **extra: Any,
) -> _Call[Any, Any]:
    """Transcribes ``file`` with ``model`` (``"@local/whisper-tiny-en"``: English;
    ``"@local/whisper-base"``: 99 languages).

    ``file``: as ``openai`` takes it (``bytes``, an open binary file, ``io.BytesIO``, a
    ``pathlib.Path``, or a ``(filename, content[, content_type])`` tuple) in wav, flac,
    mp3, ogg (Vorbis, Opus), webm or m4a; or a NumPy array of float samples (1-D mono, or
    ``(frames, channels)``) at ``sample_rate`` Hz (ingle's own argument), resampled as
    needed. ``response_format``: ``json`` (default) gives a ``Transcription``,
    ``verbose_json`` a ``TranscriptionVerbose`` (``segments``, and ``words`` with
    ``timestamp_granularities=["word"]``), ``text``, ``srt`` and ``vtt`` a ``str``.
    ``language`` (an ISO-639-1 code such as ``fr``, or an English name such as ``french``;
    ``en`` only on an English-only model; left out, a multilingual model detects it from
    the first 30 s with speech and ``verbose_json`` reports it, as ``"french"``),
    ``prompt`` and ``temperature`` are Whisper's; ``include`` and ``chunking_strategy``
    are refused (no local model has them).

    With ``stream=True``: a ``Stream`` of ``TranscriptionTextDeltaEvent`` (one per
    segment, as its 30-second window is decoded) and a last ``TranscriptionTextDoneEvent``;
    leaving it early stops the transcription. Otherwise the GIL is released while the
    audio is decoded and transcribed; Ctrl-C stops it before the next segment. In
    AsyncOpenAI the file is read, decoded and transcribed in a worker thread, and cancelling
    the awaiting task stops it (while the file decodes, or before its next segment)."""
    body = _transcription_body(locals(), extra)
    if _arguments.stream_flag(stream):
        opened = _upload(self._native.stream, "audio.transcriptions.stream", body, file, sample_rate)
        return _streamed(_TranscriptionStreamEvents, opened, cancellable=True)
    transcribed = _upload(self._native.call, "audio.transcriptions.create", body, file, sample_rate)
    return _whole(_text_in(Transcription, TranscriptionVerbose, body), transcribed)


class Transcriptions(_Resource[M]):
    """``client.audio.transcriptions``: speech to text."""

    if TYPE_CHECKING:
        @overload
        def create(self: Transcriptions[Sync], *, file: FileTypes, model: str, response_format: Literal["json"] = ..., stream: Literal[False] = ..., **params: Any) -> Transcription: ...
        @overload
        def create(self: Transcriptions[Sync], *, file: FileTypes, model: str, response_format: Literal["verbose_json"], stream: Literal[False] = ..., **params: Any) -> TranscriptionVerbose: ...
        @overload
        def create(self: Transcriptions[Sync], *, file: FileTypes, model: str, response_format: Literal["text", "srt", "vtt"], stream: Literal[False] = ..., **params: Any) -> str: ...
        @overload
        def create(self: Transcriptions[Sync], *, file: FileTypes, model: str, stream: Literal[True], **params: Any) -> Stream[TranscriptionStreamEvent]: ...
        @overload
        def create(self: Transcriptions[Async], *, file: FileTypes, model: str, response_format: Literal["json"] = ..., stream: Literal[False] = ..., **params: Any) -> _Awaited[Transcription]: ...
        @overload
        def create(self: Transcriptions[Async], *, file: FileTypes, model: str, response_format: Literal["verbose_json"], stream: Literal[False] = ..., **params: Any) -> _Awaited[TranscriptionVerbose]: ...
        @overload
        def create(self: Transcriptions[Async], *, file: FileTypes, model: str, response_format: Literal["text", "srt", "vtt"], stream: Literal[False] = ..., **params: Any) -> _Awaited[str]: ...
        @overload
        def create(self: Transcriptions[Async], *, file: FileTypes, model: str, stream: Literal[True], **params: Any) -> _Awaited[AsyncStream[TranscriptionStreamEvent]]: ...
        def create(self, **params: Any) -> Any: ...
    else:
        create = _method(_transcriptions_create)


def _translations_create(
    self: _Resource[Any],
    *,
    file: FileTypes = REQUIRED,
    model: str = REQUIRED,
    language: str = NOT_GIVEN,
    prompt: str = NOT_GIVEN,
    response_format: TranscriptionFormat = NOT_GIVEN,
    temperature: float = NOT_GIVEN,
    timestamp_granularities: List[Granularity] = NOT_GIVEN,
    sample_rate: Optional[int] = None,
    **extra: Any,
) -> _Call[Any, Any]:
    """Translates the speech of ``file`` into English text with ``model``, a multilingual
    one such as ``"@local/whisper-base"`` (or a predictor with an input annotated
    ``Parameter.TranscriptionTask``).

    ``file`` and ``sample_rate`` as in ``Transcriptions.create``. ``response_format``:
    ``json`` (default) gives a ``Translation`` (``text`` alone, as OpenAI's),
    ``verbose_json`` a ``TranslationVerbose`` (``task`` ``"translate"``, ``language``
    ``"english"``, ``duration``, ``segments``), ``text``, ``srt`` and ``vtt`` a ``str``.
    ``prompt`` and ``temperature`` are Whisper's; ingle also takes ``language`` (the
    audio's, as a code or a name: detection is skipped) and ``timestamp_granularities``
    (``words`` in ``verbose_json``). It does not stream. The English-only
    ``"@local/whisper-tiny-en"`` raises ``BadRequestError`` (``param`` ``model``). The GIL
    is released while the audio is decoded and translated (in AsyncOpenAI, in a worker
    thread)."""
    body = _transcription_body(locals(), extra)
    translated = _upload(self._native.call, "audio.translations.create", body, file, sample_rate)
    return _whole(_text_in(Translation, TranslationVerbose, body), translated)


class Translations(_Resource[M]):
    """``client.audio.translations``: speech in any language to English text, on a
    multilingual model (``"@local/whisper-base"``: Whisper's translate task). The English-only
    ``"@local/whisper-tiny-en"`` cannot translate: a request on it raises ``BadRequestError``
    (``param`` is ``model``)."""

    if TYPE_CHECKING:
        @overload
        def create(self: Translations[Sync], *, file: FileTypes, model: str, response_format: Literal["json"] = ..., **params: Any) -> Translation: ...
        @overload
        def create(self: Translations[Sync], *, file: FileTypes, model: str, response_format: Literal["verbose_json"], **params: Any) -> TranslationVerbose: ...
        @overload
        def create(self: Translations[Sync], *, file: FileTypes, model: str, response_format: Literal["text", "srt", "vtt"], **params: Any) -> str: ...
        @overload
        def create(self: Translations[Async], *, file: FileTypes, model: str, response_format: Literal["json"] = ..., **params: Any) -> _Awaited[Translation]: ...
        @overload
        def create(self: Translations[Async], *, file: FileTypes, model: str, response_format: Literal["verbose_json"], **params: Any) -> _Awaited[TranslationVerbose]: ...
        @overload
        def create(self: Translations[Async], *, file: FileTypes, model: str, response_format: Literal["text", "srt", "vtt"], **params: Any) -> _Awaited[str]: ...
        def create(self, **params: Any) -> Any: ...
    else:
        create = _method(_translations_create)


class Audio(_Resource[M]):
    """``client.audio``."""

    def __init__(self, native: _ingle.NativeClient, mode: Type[M]) -> None:
        super().__init__(native, mode)
        self.speech = Speech(native, mode)
        self.transcriptions = Transcriptions(native, mode)
        self.translations = Translations(native, mode)
