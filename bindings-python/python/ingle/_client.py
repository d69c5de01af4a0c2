"""``OpenAI`` and ``AsyncOpenAI``: the ``openai`` client's interface over the in-process engine.

Only conversion happens here: keyword arguments become the OpenAI JSON request, the native
module (``ingle._ingle``) runs it in the Rust core, and the JSON it returns becomes the objects
of ``ingle.types``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import (
    IO,
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Generic,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

from . import _arguments, _ingle, _predictors, _structured
from ._arguments import NOT_GIVEN, REQUIRED
from ._response import (
    AsyncResponseContextManager,
    AsyncStreamedBinaryAPIResponse,
    HttpxBinaryResponseContent,
    ResponseContextManager,
    StreamedBinaryAPIResponse,
)
from .types import (
    BaseModel,
    ChatCompletion,
    ChatCompletionChunk,
    Completion,
    CreateEmbeddingResponse,
    Model,
    ParsedChatCompletion,
    Prediction,
    PullProgress,
    PullResult,
    SyncPage,
    Transcription,
    TranscriptionStreamEvent,
    TranscriptionVerbose,
    Translation,
    _TranscriptionStreamEvents,
)

__all__ = ["OpenAI", "AsyncOpenAI", "Stream", "AsyncStream"]

T = TypeVar("T", bound=BaseModel)

# Every argument crosses into the native module through `_arguments`, which refuses what the
# engine could not take (a lone surrogate, NaN, an object JSON cannot write, a NUL in a path)
# with a BadRequestError naming it; the engine checks the rest (a missing `model`, a wrong role).


class Stream(Generic[T]):
    """Yields response chunks. Stopping early (``break``, ``close()``, leaving a ``with``
    block, garbage collection, Ctrl-C) stops generation at once."""

    def __init__(self, native: Any, cls: Type[T]) -> None:
        self._native = native
        self._cls = cls

    def __next__(self) -> T:
        try:
            text = next(self._native)
        except BaseException:  # StopIteration, an engine error, or KeyboardInterrupt
            self.close()
            raise
        return self._cls.construct(json.loads(text))  # type: ignore[return-value]

    def __iter__(self) -> Iterator[T]:
        # A generator, so that `break` (which drops it) closes the stream.
        try:
            while True:
                try:
                    item = self.__next__()
                except StopIteration:
                    return
                yield item
        finally:
            self.close()

    def close(self) -> None:
        """Stops generation. Safe to call more than once."""
        self._native.close()

    def __enter__(self) -> "Stream[T]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None:
            native.close()


class AsyncStream(Generic[T]):
    """The async twin of `Stream`: ``async for chunk in stream``. Each chunk is awaited in a
    worker thread, so the event loop never blocks."""

    def __init__(self, native: Any, cls: Type[T]) -> None:
        self._native = native
        self._cls = cls

    async def __anext__(self) -> T:
        text = await asyncio.to_thread(next, self._native, None)
        if text is None:
            await self.close()
            raise StopAsyncIteration
        return self._cls.construct(json.loads(text))  # type: ignore[return-value]

    async def _iterate(self) -> AsyncIterator[T]:
        try:
            while True:
                try:
                    item = await self.__anext__()
                except StopAsyncIteration:
                    return
                yield item
        finally:
            self._native.close()

    def __aiter__(self) -> AsyncIterator[T]:
        return self._iterate()

    async def close(self) -> None:
        """Stops generation."""
        self._native.close()

    async def __aenter__(self) -> "AsyncStream[T]":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __del__(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None:
            native.close()


class _Resource:
    def __init__(self, native: Any) -> None:
        self._native = native


class ChatCompletions(_Resource):
    @overload
    def create(self, *, stream: Literal[True], **params: Any) -> Stream[ChatCompletionChunk]: ...
    @overload
    def create(self, *, stream: Literal[False] = ..., **params: Any) -> ChatCompletion: ...
    def create(
        self, *, stream: bool = False, **params: Any
    ) -> Union[ChatCompletion, Stream[ChatCompletionChunk]]:
        """``model``, ``messages`` and the OpenAI chat parameters (see the README's table)."""
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            return Stream(self._native.chat_completions_stream(body), ChatCompletionChunk)
        return ChatCompletion.construct(json.loads(self._native.chat_completions_create(body)))  # type: ignore[return-value]

    def parse(self, *, response_format: Any = NOT_GIVEN, **params: Any) -> ParsedChatCompletion:
        """``create`` whose ``response_format`` may be a type (a pydantic model...), as the
        openai client's ``parse``: the output is constrained to its JSON schema, and
        ``choices[i].message.parsed`` is the content validated into it."""
        if params.get("stream"):
            raise TypeError("parse() does not stream; use create(stream=True)")
        fmt, read = _structured.response_format_of(response_format)
        if fmt is not NOT_GIVEN:
            params["response_format"] = fmt
        body = _arguments.body(params)
        return _structured.parsed(json.loads(self._native.chat_completions_create(body)), read)


class Chat(_Resource):
    def __init__(self, native: Any) -> None:
        super().__init__(native)
        self.completions = ChatCompletions(native)


class Completions(_Resource):
    @overload
    def create(self, *, stream: Literal[True], **params: Any) -> Stream[Completion]: ...
    @overload
    def create(self, *, stream: Literal[False] = ..., **params: Any) -> Completion: ...
    def create(self, *, stream: bool = False, **params: Any) -> Union[Completion, Stream[Completion]]:
        """``model``, ``prompt`` and the OpenAI completion parameters."""
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            return Stream(self._native.completions_stream(body), Completion)
        return Completion.construct(json.loads(self._native.completions_create(body)))  # type: ignore[return-value]


class Embeddings(_Resource):
    def create(self, **params: Any) -> CreateEmbeddingResponse:
        """``model``, ``input`` (a string or a list of strings), ``dimensions``,
        ``encoding_format`` ("float" or "base64"), ``user``. ``.data[i].embedding`` is a list
        of floats (or a base64 string); ``.to_numpy()`` is every vector as one NumPy array,
        without copying through lists."""
        body = _arguments.body(params)
        return CreateEmbeddingResponse._from_matrix(*self._native.embeddings_create(body))


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


def _binary_content(result: Any) -> HttpxBinaryResponseContent:
    return HttpxBinaryResponseContent(*result)


class Speech(_Resource):
    """``client.audio.speech``: text to speech."""

    def __init__(self, native: Any) -> None:
        super().__init__(native)
        self.with_streaming_response = SpeechWithStreamingResponse(self)

    def create(
        self,
        *,
        input: str = REQUIRED,
        model: str = REQUIRED,
        voice: str = REQUIRED,
        instructions: str = NOT_GIVEN,
        response_format: ResponseFormat = NOT_GIVEN,
        speed: float = NOT_GIVEN,
        stream_format: StreamFormat = NOT_GIVEN,
        **extra: Any,
    ) -> HttpxBinaryResponseContent:
        """Speaks ``input`` (1 to 4096 characters) with ``model`` (such as
        ``"@local/piper-en-us-joe-medium"``) in ``voice`` (one of the model's, or any OpenAI
        voice name: ``alloy``, ``ash``, ... map to the model's default). ``response_format``:
        ``mp3`` (default), ``opus``, ``aac``, ``flac``, ``wav`` or ``pcm`` (raw 16-bit
        little-endian mono at 24 kHz); ``speed``: 0.25 to 4.0; ``stream_format="sse"`` makes
        the content server-sent events of base64 audio. ``instructions`` are refused by models
        that cannot follow them (all local ones so far).

        Returns the whole file once synthesised (the GIL is released meanwhile), and the
        samples it was encoded from: ``r.write_to_file(path)``, ``r.content``,
        ``r.to_numpy()`` at ``r.sample_rate``. Ctrl-C stops the synthesis before its next
        sentence; for audio as it is produced, use ``with_streaming_response.create(...)``."""
        body = _speech_body(
            model, input, voice, instructions, response_format, speed, stream_format, extra
        )
        return _binary_content(self._native.audio_speech_create(body))


class SpeechWithStreamingResponse:
    """``client.audio.speech.with_streaming_response``."""

    def __init__(self, speech: Speech) -> None:
        self._speech = speech

    def create(
        self,
        *,
        input: str = REQUIRED,
        model: str = REQUIRED,
        voice: str = REQUIRED,
        instructions: str = NOT_GIVEN,
        response_format: ResponseFormat = NOT_GIVEN,
        speed: float = NOT_GIVEN,
        stream_format: StreamFormat = NOT_GIVEN,
        **extra: Any,
    ) -> ResponseContextManager[StreamedBinaryAPIResponse]:
        """``Speech.create``'s arguments; the audio comes as it is synthesised, a sentence at a
        time::

            with client.audio.speech.with_streaming_response.create(
                model=..., voice="alloy", input=text, response_format="wav"
            ) as response:
                response.stream_to_file("speech.wav")   # or: for chunk in response.iter_bytes()

        The request starts when the ``with`` block is entered (a bad argument raises there);
        leaving it stops synthesis."""
        native = self._speech._native

        def request() -> StreamedBinaryAPIResponse:
            body = _speech_body(
                model, input, voice, instructions, response_format, speed, stream_format, extra
            )
            return StreamedBinaryAPIResponse(native.audio_speech_stream(body))

        return ResponseContextManager(request)


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


def _transcription_body(params: Dict[str, Any], extra: Dict[str, Any]) -> str:
    params = dict(params)
    for name in ("self", "file", "sample_rate", "stream", "extra"):
        params.pop(name, None)
    params.update(extra)
    return _arguments.transcription(params)


def _transcription(result: Tuple[str, str, str]) -> Any:
    """The response of the format: ``Transcription``, ``TranscriptionVerbose``, or for
    ``text``, ``srt`` and ``vtt`` the body as a ``str``, as ``openai`` returns them."""
    response_format, body, _content_type = result
    if response_format == "json":
        return Transcription.construct(json.loads(body))
    if response_format == "verbose_json":
        return TranscriptionVerbose.construct(json.loads(body))
    return body


class Transcriptions(_Resource):
    """``client.audio.transcriptions``: speech to text."""

    @overload
    def create(
        self,
        *,
        file: FileTypes,
        model: str,
        response_format: Literal["json"] = ...,
        stream: Literal[False] = ...,
        **params: Any,
    ) -> Transcription: ...
    @overload
    def create(
        self,
        *,
        file: FileTypes,
        model: str,
        response_format: Literal["verbose_json"],
        stream: Literal[False] = ...,
        **params: Any,
    ) -> TranscriptionVerbose: ...
    @overload
    def create(
        self,
        *,
        file: FileTypes,
        model: str,
        response_format: Literal["text", "srt", "vtt"],
        stream: Literal[False] = ...,
        **params: Any,
    ) -> str: ...
    @overload
    def create(
        self, *, file: FileTypes, model: str, stream: Literal[True], **params: Any
    ) -> Stream[TranscriptionStreamEvent]: ...
    def create(
        self,
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
    ) -> Union[Transcription, TranscriptionVerbose, str, Stream[TranscriptionStreamEvent]]:
        """Transcribes ``file`` with ``model`` (``"@local/whisper-tiny-en"``: English).

        ``file``: as ``openai`` takes it (``bytes``, an open binary file, ``io.BytesIO``, a
        ``pathlib.Path``, or a ``(filename, content[, content_type])`` tuple) in wav, flac,
        mp3, ogg (Vorbis, Opus), webm or m4a; or a NumPy array of float samples (1-D mono, or
        ``(frames, channels)``) at ``sample_rate`` Hz (ingle's own argument), resampled as
        needed. ``response_format``: ``json`` (default) gives a ``Transcription``,
        ``verbose_json`` a ``TranscriptionVerbose`` (``segments``, and ``words`` with
        ``timestamp_granularities=["word"]``), ``text``, ``srt`` and ``vtt`` a ``str``.
        ``language`` (``en``), ``prompt`` and ``temperature`` are Whisper's; ``include`` and
        ``chunking_strategy`` are refused (no local model has them).

        With ``stream=True``: a ``Stream`` of ``TranscriptionTextDeltaEvent`` (one per
        segment, as its 30-second window is decoded) and a last ``TranscriptionTextDoneEvent``;
        leaving it early stops the transcription. Otherwise the GIL is released while the
        audio is decoded and transcribed; Ctrl-C stops it before the next segment."""
        body = _transcription_body(locals(), extra)
        audio = _arguments.audio_file(file, sample_rate)
        if _arguments.stream_flag(stream):
            native = self._native.audio_transcriptions_stream(body, *audio)
            return Stream(native, _TranscriptionStreamEvents)  # type: ignore[arg-type]
        return _transcription(self._native.audio_transcriptions_create(body, *audio))


class Translations(_Resource):
    """``client.audio.translations``: speech in any language to English text. Every model
    ingle has is English-only, so each request raises ``BadRequestError`` (``param`` is
    ``model``): use ``audio.transcriptions`` for English audio."""

    def create(
        self,
        *,
        file: FileTypes = REQUIRED,
        model: str = REQUIRED,
        prompt: str = NOT_GIVEN,
        response_format: TranscriptionFormat = NOT_GIVEN,
        temperature: float = NOT_GIVEN,
        sample_rate: Optional[int] = None,
        **extra: Any,
    ) -> Union[Translation, str]:
        body = _transcription_body(locals(), extra)
        audio = _arguments.audio_file(file, sample_rate)
        return _translation(self._native.audio_translations_create(body, *audio))


def _translation(result: Tuple[str, str, str]) -> Any:
    response_format, body, _content_type = result
    if response_format in ("json", "verbose_json"):
        return Translation.construct(json.loads(body))
    return body


class Audio(_Resource):
    """``client.audio``."""

    def __init__(self, native: Any) -> None:
        super().__init__(native)
        self.speech = Speech(native)
        self.transcriptions = Transcriptions(native)
        self.translations = Translations(native)


class Models(_Resource):
    def list(self) -> SyncPage[Model]:
        return SyncPage.construct(json.loads(self._native.models_list()))  # type: ignore[return-value]

    def retrieve(self, model: str = REQUIRED) -> Model:
        text = self._native.models_retrieve(_arguments.text("model", model))
        return Model.construct(json.loads(text))  # type: ignore[return-value]

    def pull(
        self, model: str = REQUIRED, *, progress: Optional[Callable[[PullProgress], Any]] = None
    ) -> PullResult:
        """Downloads ``model`` (a tag of ingle's catalog: ``ingle models`` lists them) and what it
        needs into the models directory, each file verified (sha256) and written atomically;
        an interrupted pull resumes. Files already there are re-hashed, a corrupted one fetched
        again; the model is then served by this client. ``progress`` receives a
        ``PullProgress`` per step; returning ``False`` (or raising, or Ctrl-C) stops the pull.
        ingle's own method (as Ollama's ``pull``): OpenAI's models are not downloaded."""
        callback = None
        if progress is not None:
            if not callable(progress):
                raise TypeError("progress must be a callable taking a PullProgress")

            def callback(event_json: str) -> Any:
                return progress(PullProgress.construct(json.loads(event_json)))  # type: ignore[arg-type]

        text = self._native.models_pull(_arguments.text("model", model), callback)
        return PullResult.construct(json.loads(text))  # type: ignore[return-value]

    def catalog(self) -> List[Dict[str, Any]]:
        """What ``pull`` can download: each entry's ``tag``, ``kind``, ``description``,
        ``licence``, ``size`` (bytes), ``cached`` (its files are in the models directory) and
        ``requires``. ingle's own method."""
        return json.loads(self._native.models_catalog())

    def unload(self, model: str = REQUIRED) -> bool:
        """Frees the model's memory (weights, KV cache, threads); the next request loads it
        again. Requests running on it finish first. Returns whether it was loaded. ingle's own
        method: OpenAI's models do not live in your process."""
        return self._native.models_unload(_arguments.text("model", model))

    def is_loaded(self, model: str = REQUIRED) -> bool:
        """Whether the model is in memory now."""
        return self._native.models_is_loaded(_arguments.text("model", model))


class Predictions(_Resource):
    """Run any predictor by tag with named inputs (ingle's own API, below the OpenAI one).
    NumPy arrays are tensor inputs; ``ingle.AudioSamples`` audio ones. Invalid inputs raise;
    a predictor that fails while running gives a prediction with ``error`` (and ``logs``)."""

    def create(self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None) -> Prediction:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        text = self._native.predictions_create(tag, body, raw)
        return Prediction.construct(json.loads(text))  # type: ignore[return-value]

    def stream(
        self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None
    ) -> Stream[Prediction]:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        return Stream(self._native.predictions_stream(tag, body, raw), Prediction)


class Predictors:
    """``client.predictors``: serve functions of your own (see ``ingle.predictor``)."""

    def __init__(self, native: Any) -> None:
        self._native = native

    def register(self, *predictors: "_predictors.Predictor") -> None:
        """Serves each predictor under its tag, through every OpenAI method its annotations
        claim and through ``predictions``. A tag already served, or a signature that breaks a
        method's rules, raises ``PredictorDefinitionError``."""
        for item in predictors:
            _predictors._register(self._native, item)


def _native_client(config: Any, models_dir: Any) -> Any:
    """The engine's client; an invalid config (or path) raises here, not at the first call."""
    return _ingle.NativeClient(
        _arguments.path("config", config), _arguments.path("models_dir", models_dir)
    )


class OpenAI:
    """Runs models in this process. ``config``: an ingle TOML config file (default:
    ``$INGLE_CONFIG``, else the default model); ``models_dir``: where model files are.

    The ``openai`` client's connection arguments (``api_key``, ``base_url``, ``timeout``, ...)
    are accepted and ignored, so existing code runs unchanged. ``base_url`` reads ``None``:
    there is no server (frameworks that read it, as openai-agents does, then take the client
    for one that is not OpenAI's)."""

    base_url: None = None

    def __init__(
        self,
        *,
        config: Union[str, "os.PathLike[str]", None] = None,
        models_dir: Union[str, "os.PathLike[str]", None] = None,
        predictors: Sequence["_predictors.Predictor"] = (),
        **openai_arguments: Any,
    ) -> None:
        self._native = _native_client(config, models_dir)
        self.predictors = Predictors(self._native)
        self.predictors.register(*predictors)
        self.chat = Chat(self._native)
        self.completions = Completions(self._native)
        self.embeddings = Embeddings(self._native)
        self.audio = Audio(self._native)
        self.models = Models(self._native)
        self.predictions = Predictions(self._native)

    def metrics(self, model: str = REQUIRED) -> Dict[str, int]:
        """Load figures of a model: ``active_requests``, ``queued_requests``,
        ``generated_tokens``, ``cancelled_requests``."""
        return json.loads(self._native.metrics(_arguments.text("model", model)))  # type: ignore[no-any-return]

    def close(self) -> None:
        """Nothing to release early: models are freed with the last client that uses them."""

    def __enter__(self) -> "OpenAI":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)


async def _cancellable(function: Callable[..., Any], *args: Any) -> Any:
    """Runs a whole-response create in a worker thread; cancelling the awaiting task stops
    generation at the next token (the next sentence, the next segment)."""
    cancel = _ingle.CancelFlag()
    try:
        return await asyncio.to_thread(function, *args, cancel=cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise


class AsyncChatCompletions(_Resource):
    async def create(
        self, *, stream: bool = False, **params: Any
    ) -> Union[ChatCompletion, AsyncStream[ChatCompletionChunk]]:
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            native = await _in_thread(self._native.chat_completions_stream, body)
            return AsyncStream(native, ChatCompletionChunk)
        text = await _cancellable(self._native.chat_completions_create, body)
        return ChatCompletion.construct(json.loads(text))  # type: ignore[return-value]

    async def parse(self, *, response_format: Any = NOT_GIVEN, **params: Any) -> ParsedChatCompletion:
        """As ``OpenAI().chat.completions.parse``."""
        if params.get("stream"):
            raise TypeError("parse() does not stream; use create(stream=True)")
        fmt, read = _structured.response_format_of(response_format)
        if fmt is not NOT_GIVEN:
            params["response_format"] = fmt
        text = await _cancellable(self._native.chat_completions_create, _arguments.body(params))
        return _structured.parsed(json.loads(text), read)


class AsyncChat(_Resource):
    def __init__(self, native: Any) -> None:
        super().__init__(native)
        self.completions = AsyncChatCompletions(native)


class AsyncCompletions(_Resource):
    async def create(
        self, *, stream: bool = False, **params: Any
    ) -> Union[Completion, AsyncStream[Completion]]:
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            native = await _in_thread(self._native.completions_stream, body)
            return AsyncStream(native, Completion)
        text = await _cancellable(self._native.completions_create, body)
        return Completion.construct(json.loads(text))  # type: ignore[return-value]


class AsyncEmbeddings(_Resource):
    async def create(self, **params: Any) -> CreateEmbeddingResponse:
        """`Embeddings.create`, run in a worker thread."""
        body = _arguments.body(params)
        result = await _in_thread(self._native.embeddings_create, body)
        return CreateEmbeddingResponse._from_matrix(*result)


class AsyncSpeech(_Resource):
    """``client.audio.speech`` of ``AsyncOpenAI``."""

    def __init__(self, native: Any) -> None:
        super().__init__(native)
        self.with_streaming_response = AsyncSpeechWithStreamingResponse(self)

    async def create(
        self,
        *,
        input: str = REQUIRED,
        model: str = REQUIRED,
        voice: str = REQUIRED,
        instructions: str = NOT_GIVEN,
        response_format: ResponseFormat = NOT_GIVEN,
        speed: float = NOT_GIVEN,
        stream_format: StreamFormat = NOT_GIVEN,
        **extra: Any,
    ) -> HttpxBinaryResponseContent:
        """`Speech.create`, synthesised in a worker thread. Cancelling the awaiting task stops
        the synthesis before its next sentence."""
        body = _speech_body(
            model, input, voice, instructions, response_format, speed, stream_format, extra
        )
        return _binary_content(await _cancellable(self._native.audio_speech_create, body))


class AsyncSpeechWithStreamingResponse:
    """``client.audio.speech.with_streaming_response`` of ``AsyncOpenAI``."""

    def __init__(self, speech: AsyncSpeech) -> None:
        self._speech = speech

    def create(
        self,
        *,
        input: str = REQUIRED,
        model: str = REQUIRED,
        voice: str = REQUIRED,
        instructions: str = NOT_GIVEN,
        response_format: ResponseFormat = NOT_GIVEN,
        speed: float = NOT_GIVEN,
        stream_format: StreamFormat = NOT_GIVEN,
        **extra: Any,
    ) -> AsyncResponseContextManager[AsyncStreamedBinaryAPIResponse]:
        """``async with ... as response: async for chunk in response.iter_bytes(): ...``: the
        audio as it is synthesised, each chunk awaited in a worker thread. Leaving the block,
        or cancelling the task, stops synthesis."""
        native = self._speech._native

        async def request() -> AsyncStreamedBinaryAPIResponse:
            body = _speech_body(
                model, input, voice, instructions, response_format, speed, stream_format, extra
            )
            return AsyncStreamedBinaryAPIResponse(
                await _in_thread(native.audio_speech_stream, body)
            )

        return AsyncResponseContextManager(request)


class AsyncTranscriptions(_Resource):
    """``client.audio.transcriptions`` of ``AsyncOpenAI``."""

    @overload
    async def create(
        self,
        *,
        file: FileTypes,
        model: str,
        response_format: Literal["json"] = ...,
        stream: Literal[False] = ...,
        **params: Any,
    ) -> Transcription: ...
    @overload
    async def create(
        self,
        *,
        file: FileTypes,
        model: str,
        response_format: Literal["verbose_json"],
        stream: Literal[False] = ...,
        **params: Any,
    ) -> TranscriptionVerbose: ...
    @overload
    async def create(
        self,
        *,
        file: FileTypes,
        model: str,
        response_format: Literal["text", "srt", "vtt"],
        stream: Literal[False] = ...,
        **params: Any,
    ) -> str: ...
    @overload
    async def create(
        self, *, file: FileTypes, model: str, stream: Literal[True], **params: Any
    ) -> AsyncStream[TranscriptionStreamEvent]: ...
    async def create(
        self,
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
    ) -> Union[Transcription, TranscriptionVerbose, str, AsyncStream[TranscriptionStreamEvent]]:
        """`Transcriptions.create`: the file is read, decoded and transcribed in a worker
        thread. Cancelling the awaiting task stops the transcription before its next segment;
        with ``stream=True``, ``async for event in stream``."""
        body = _transcription_body(locals(), extra)
        streaming = _arguments.stream_flag(stream)
        audio = await _in_thread(_arguments.audio_file, file, sample_rate)
        if streaming:
            native = await _in_thread(self._native.audio_transcriptions_stream, body, *audio)
            return AsyncStream(native, _TranscriptionStreamEvents)  # type: ignore[arg-type]
        result = await _cancellable(self._native.audio_transcriptions_create, body, *audio)
        return _transcription(result)


class AsyncTranslations(_Resource):
    """``client.audio.translations`` of ``AsyncOpenAI``: raises ``BadRequestError`` (every
    model ingle has is English-only)."""

    async def create(
        self,
        *,
        file: FileTypes = REQUIRED,
        model: str = REQUIRED,
        prompt: str = NOT_GIVEN,
        response_format: TranscriptionFormat = NOT_GIVEN,
        temperature: float = NOT_GIVEN,
        sample_rate: Optional[int] = None,
        **extra: Any,
    ) -> Union[Translation, str]:
        body = _transcription_body(locals(), extra)
        audio = await _in_thread(_arguments.audio_file, file, sample_rate)
        result = await _in_thread(self._native.audio_translations_create, body, *audio)
        return _translation(result)


class AsyncAudio(_Resource):
    """``client.audio`` of ``AsyncOpenAI``."""

    def __init__(self, native: Any) -> None:
        super().__init__(native)
        self.speech = AsyncSpeech(native)
        self.transcriptions = AsyncTranscriptions(native)
        self.translations = AsyncTranslations(native)


class AsyncModels(_Resource):
    async def list(self) -> SyncPage[Model]:
        return SyncPage.construct(json.loads(self._native.models_list()))  # type: ignore[return-value]

    async def retrieve(self, model: str = REQUIRED) -> Model:
        text = self._native.models_retrieve(_arguments.text("model", model))
        return Model.construct(json.loads(text))  # type: ignore[return-value]

    async def pull(
        self, model: str = REQUIRED, *, progress: Optional[Callable[[PullProgress], Any]] = None
    ) -> PullResult:
        """Downloads ``model`` in a worker thread (see ``Models.pull``); ``progress`` is called
        from that thread."""
        return await _in_thread(lambda: Models(self._native).pull(model, progress=progress))

    async def catalog(self) -> List[Dict[str, Any]]:
        """What ``pull`` can download (see ``Models.catalog``)."""
        return json.loads(self._native.models_catalog())

    async def unload(self, model: str = REQUIRED) -> bool:
        """Frees the model's memory; the next request loads it again (see ``Models.unload``)."""
        return await _in_thread(self._native.models_unload, _arguments.text("model", model))

    async def is_loaded(self, model: str = REQUIRED) -> bool:
        return self._native.models_is_loaded(_arguments.text("model", model))


class AsyncPredictions(_Resource):
    async def create(
        self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None
    ) -> Prediction:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        text = await _in_thread(self._native.predictions_create, tag, body, raw)
        return Prediction.construct(json.loads(text))  # type: ignore[return-value]

    async def stream(
        self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None
    ) -> AsyncStream[Prediction]:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        native = await _in_thread(self._native.predictions_stream, tag, body, raw)
        return AsyncStream(native, Prediction)


class AsyncOpenAI:
    """`OpenAI` for asyncio: the same methods, awaited. The engine works in worker threads, so
    the event loop keeps running."""

    base_url: None = None  # as `OpenAI.base_url`

    def __init__(
        self,
        *,
        config: Union[str, "os.PathLike[str]", None] = None,
        models_dir: Union[str, "os.PathLike[str]", None] = None,
        predictors: Sequence["_predictors.Predictor"] = (),
        **openai_arguments: Any,
    ) -> None:
        self._native = _native_client(config, models_dir)
        self.predictors = Predictors(self._native)
        self.predictors.register(*predictors)
        self.chat = AsyncChat(self._native)
        self.completions = AsyncCompletions(self._native)
        self.embeddings = AsyncEmbeddings(self._native)
        self.audio = AsyncAudio(self._native)
        self.models = AsyncModels(self._native)
        self.predictions = AsyncPredictions(self._native)

    async def metrics(self, model: str = REQUIRED) -> Dict[str, int]:
        text = await _in_thread(self._native.metrics, _arguments.text("model", model))
        return json.loads(text)  # type: ignore[no-any-return]

    async def close(self) -> None:
        """Nothing to release early: models are freed with the last client that uses them."""

    async def __aenter__(self) -> "AsyncOpenAI":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
