"""``OpenAI`` and ``AsyncOpenAI``: the ``openai`` client's interface over the in-process engine.

Only conversion happens here: keyword arguments become the OpenAI JSON request, the native
module (``ingle._ingle``) runs it in the Rust core, and the JSON it returns becomes the objects
of ``ingle.types``. `_Clients` (with `_Closes` / `_ClosesAsync`) is what every client shares,
the Anthropic ones included: the constructor, the predictors, ``close`` and ``with``.
Each resource is written once for both clients (see `_base`): a method is a
function returning its `_Call`; the two clients differ only in their mode. A ``create`` whose
``stream=True`` streams is a `_streaming`; the few methods whose return type depends on another
argument (tokenize's ``with_pieces``) declare their overloads for each mode under
``TYPE_CHECKING``, where mypy reads them.
"""

from __future__ import annotations

import json
import os
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Generic,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
    cast,
    overload,
)

from . import _arguments, _ingle, _predictors, _structured
from ._arguments import NOT_GIVEN, REQUIRED
from ._audio import Audio
from ._base import (
    _Awaited,
    M,
    Async,
    _Mode,
    AsyncStream,
    Stream,
    Sync,
    _Call,
    _json,
    _method,
    _Resource,
    _streamed,
    _streaming,
    _whole,
)
from ._responses import Responses
from .types import (
    ChatCompletion,
    ChatCompletionChunk,
    Completion,
    CreateEmbeddingResponse,
    ImageGenStreamEvent,
    ImagesResponse,
    Model,
    ParsedChatCompletion,
    Prediction,
    PullProgress,
    PullResult,
    DetokenizeResponse,
    RerankResponse,
    SyncPage,
    TokenizePiecesResponse,
    TokenizeResponse,
)

__all__ = ["OpenAI", "AsyncOpenAI", "Stream", "AsyncStream"]

# Every argument crosses into the native module through `_arguments`, which refuses what the
# engine could not take (a lone surrogate, NaN, an object JSON cannot write, a NUL in a path)
# with a BadRequestError naming it; the engine checks the rest (a missing `model`, a wrong role).


def _chat_create(
    self: _Resource[Any], *, stream: bool = False, **params: Any
) -> Union[_Call[ChatCompletion, ChatCompletion], _Call[Stream[ChatCompletionChunk], AsyncStream[ChatCompletionChunk]]]:
    """``model``, ``messages`` and the OpenAI chat parameters (see docs/openai-parameters.md);
    ``stream=True`` gives the chunks as they are generated."""
    body = _arguments.body(params)
    if _arguments.stream_flag(stream):
        return _streamed(ChatCompletionChunk, self._native.stream, "chat.completions.stream", body)
    return _whole(_json(ChatCompletion.construct), self._native.call, "chat.completions.create", body)


class ChatCompletions(_Resource[M]):
    create = _streaming[ChatCompletion, ChatCompletionChunk](_chat_create)

    @_method
    def parse(self, /, *, response_format: Any = NOT_GIVEN, **params: Any) -> _Call[ParsedChatCompletion, ParsedChatCompletion]:
        """``create`` whose ``response_format`` may be a type (a pydantic model...), as the
        openai client's ``parse``: the output is constrained to its JSON schema, and
        ``choices[i].message.parsed`` is the content validated into it."""
        if params.get("stream"):
            raise TypeError("parse() does not stream; use create(stream=True)")
        fmt, read = _structured.response_format_of(response_format)
        if fmt is not NOT_GIVEN:
            params["response_format"] = fmt
        parsed = lambda text: _structured.parsed(json.loads(text), read)  # noqa: E731
        return _whole(parsed, self._native.call, "chat.completions.create", _arguments.body(params))


    @_method
    def render(self, /, **params: Any) -> _Call[str, str]:
        """The prompt ``create`` with the same arguments would decode from: the model's chat
        template's rendering, tools and ``chat_template_kwargs`` included, generating nothing
        (llama.cpp server's ``/apply-template``; ``model`` defaults to the default chat model)."""
        read = lambda text: cast(str, json.loads(text)["prompt"])  # noqa: E731
        return _whole(read, self._native.call, "apply_template", _arguments.body(params))


class Chat(_Resource[M]):
    def __init__(self, native: _ingle.NativeClient, mode: Type[M]) -> None:
        super().__init__(native, mode)
        self.completions = ChatCompletions(native, mode)


def _completions_create(
    self: _Resource[Any], *, stream: bool = False, **params: Any
) -> Union[_Call[Completion, Completion], _Call[Stream[Completion], AsyncStream[Completion]]]:
    """``model``, ``prompt`` and the OpenAI completion parameters."""
    body = _arguments.body(params)
    if _arguments.stream_flag(stream):
        return _streamed(Completion, self._native.stream, "completions.stream", body)
    return _whole(_json(Completion.construct), self._native.call, "completions.create", body)


class Completions(_Resource[M]):
    create = _streaming[Completion, Completion](_completions_create)


def _from_matrix(result: Any) -> CreateEmbeddingResponse:
    return CreateEmbeddingResponse._from_matrix(*result)


class Embeddings(_Resource[M]):
    @_method
    def create(self, /, **params: Any) -> _Call[CreateEmbeddingResponse, CreateEmbeddingResponse]:
        """``model``, ``input`` (a string or a list of strings), ``dimensions``,
        ``encoding_format`` ("float" or "base64"), ``user``. ``.data[i].embedding`` is a list
        of floats (or a base64 string); ``.to_numpy()`` is every vector as one NumPy array,
        without copying through lists."""
        body = _arguments.body(params)
        return _whole(_from_matrix, self._native.call, "embeddings.create", body, cancellable=False)


def _reranked(text: str) -> RerankResponse:
    """A ranking: a RerankResponse, or for a request with ``texts`` (text-embeddings-inference's
    shape) its bare list of ``{"index", "score", "text"}`` dicts."""
    answer = json.loads(text)
    if isinstance(answer, list):
        # `create` is typed for `documents`; TEI's `texts` shape answers its list as it is.
        return cast(RerankResponse, answer)
    return RerankResponse.construct(answer)


class Rerank(_Resource[M]):
    @_method
    def create(self, /, **params: Any) -> _Call[RerankResponse, RerankResponse]:
        """``model``, ``query``, ``documents`` (strings, or dicts with a ``text``), ``top_n``,
        ``return_documents`` (default True): the documents ranked by relevance to the query,
        most relevant first (Jina's and Cohere's rerank shape). An embedding model scores by
        cosine similarity; a predictor annotated ``RerankQuery``, ``RerankDocuments`` and
        ``RerankScores`` scores itself. With ``texts`` instead of ``documents``
        (text-embeddings-inference's shape) the answer is its list of dicts."""
        return _whole(_reranked, self._native.call, "rerank.create", _arguments.body(params))


def _images_generate(
    self: _Resource[Any], *, stream: bool = False, **params: Any
) -> Union[_Call[ImagesResponse, ImagesResponse], _Call[Stream[ImageGenStreamEvent], AsyncStream[ImageGenStreamEvent]]]:
    """``model``, ``prompt``, ``n``, ``size`` (``"WIDTHxHEIGHT"`` or ``"auto"``),
    ``output_format`` (png, jpeg, webp), ``output_compression``, ``background``,
    ``quality``, ``partial_images``: images made by a predictor annotated ``ImageWidth``,
    ``ImageHeight`` or ``ImageCount``, as ``b64_json``. ``stream=True`` gives its
    ``image_generation.partial_image`` and ``image_generation.completed`` events."""
    body = _arguments.body(params)
    if _arguments.stream_flag(stream):
        return _streamed(ImageGenStreamEvent, self._native.stream, "images.stream", body)
    return _whole(_json(ImagesResponse.construct), self._native.call, "images.generate", body)


class Images(_Resource[M]):
    generate = _streaming[ImagesResponse, ImageGenStreamEvent](_images_generate)


def _pull_progress(progress: Optional[Callable[[PullProgress], Any]]) -> Optional[Callable[[str], Any]]:
    """The native progress callback that gives ``progress`` each event as a PullProgress."""
    if progress is None:
        return None
    if not callable(progress):
        raise TypeError("progress must be a callable taking a PullProgress")
    return lambda event_json: progress(PullProgress.construct(json.loads(event_json)))


class Models(_Resource[M]):
    # AsyncOpenAI runs these in a worker thread, as every call that may read the disk: listing
    # checks the models' files and scans the Hugging Face cache.
    @_method
    def list(self) -> _Call[SyncPage[Model], SyncPage[Model]]:
        read = _json(SyncPage[Model].construct)
        return _whole(read, self._native.call, "models.list", "{}", cancellable=False)

    @_method
    def retrieve(self, model: str = REQUIRED) -> _Call[Model, Model]:
        body = _arguments.named(model=_arguments.text("model", model))
        return _whole(_json(Model.construct), self._native.call, "models.retrieve", body, cancellable=False)

    @_method
    def pull(
        self, model: str = REQUIRED, *, progress: Optional[Callable[[PullProgress], Any]] = None
    ) -> _Call[PullResult, PullResult]:
        """Downloads ``model`` (a tag of ingle's catalog: ``ingle models`` lists them; or a
        Hugging Face reference, ``hf.co/ORG/REPO[:QUANT][@REVISION]``, into the Hub's shared
        cache, where ``huggingface_hub`` finds it too) and what it needs into the models directory, each file verified (sha256) and written atomically;
        an interrupted pull resumes. Files already there are re-hashed, a corrupted one fetched
        again; the model is then served by this client. ``progress`` receives a
        ``PullProgress`` per step; returning ``False`` (or raising, or Ctrl-C) stops the pull.
        AsyncOpenAI pulls in a worker thread and calls ``progress`` from it. ingle's own method
        (as Ollama's ``pull``): OpenAI's models are not downloaded."""
        callback, model = _pull_progress(progress), _arguments.text("model", model)
        return _whole(_json(PullResult.construct), self._native.models_pull, model, callback, cancellable=False)

    @_method
    def catalog(self) -> _Call[List[Dict[str, Any]], List[Dict[str, Any]]]:
        """What ``pull`` can download: each entry's ``tag``, ``kind``, ``description``,
        ``licence``, ``size`` (bytes), ``cached`` (its files are in the models directory),
        ``requires`` and ``optional`` (left out of ``ingle pull --all``). ingle's own method."""
        read = lambda text: cast(List[Dict[str, Any]], json.loads(text))  # noqa: E731
        return _whole(read, self._native.models_catalog, cancellable=False)

    @_method
    def unload(self, model: str = REQUIRED) -> _Call[bool, bool]:
        """Frees the model's memory (weights, KV cache, threads); the next request loads it
        again. Requests running on it finish first. Returns whether it was loaded. ingle's own
        method: OpenAI's models do not live in your process."""
        return _whole(bool, self._native.models_unload, _arguments.text("model", model), cancellable=False)

    @_method
    def is_loaded(self, model: str = REQUIRED) -> _Call[bool, bool]:
        """Whether the model is in memory now (a tag not yet known is looked for in the Hugging
        Face cache)."""
        return _whole(bool, self._native.models_is_loaded, _arguments.text("model", model), cancellable=False)


class Predictions(_Resource[M]):
    """Run any predictor by tag with named inputs (ingle's own API, below the OpenAI one).
    NumPy arrays are tensor inputs; ``ingle.AudioSamples`` audio ones. Invalid inputs raise;
    a predictor that fails while running gives a prediction with ``error`` (and ``logs``)."""

    @_method
    def create(self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None) -> _Call[Prediction, Prediction]:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        return _whole(_json(Prediction.construct), self._native.predictions_create, tag, body, raw)

    @_method
    def stream(
        self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None
    ) -> _Call[Stream[Prediction], AsyncStream[Prediction]]:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        return _streamed(Prediction, self._native.predictions_stream, tag, body, raw)


class Predictors:
    """``client.predictors``: serve functions of your own (see ``ingle.predictor``)."""

    def __init__(self, native: _ingle.NativeClient) -> None:
        self._native = native

    def register(self, *predictors: "_predictors.Predictor") -> None:
        """Serves each predictor under its tag, through every OpenAI method its annotations
        claim and through ``predictions``. A tag already served, or a signature that breaks a
        method's rules, raises ``PredictorDefinitionError``."""
        for item in predictors:
            _predictors._register(self._native, item)


def _is_config_text(value: str) -> bool:
    """Whether ``config=`` holds the config itself (TOML): text with a ``=``, ``[``, ``{`` or line
    break that names no file, unless it is one line ending in ``.toml`` or ``.json`` (a path)."""
    if os.path.isfile(value):
        return False
    if "\n" not in value and value.rstrip().lower().endswith((".toml", ".json")):
        return False
    return any(c in value for c in "=[{\n")


def _native_client(config: Any, models_dir: Any) -> Any:
    """The engine's client; an invalid config (or path) raises here, not at the first call.
    ``config`` is a file's path, the config as a dict, or the config as TOML text (a str with
    a ``=``, ``[`` or line break that names no file and does not end in ``.toml`` / ``.json``)."""
    models_dir = _arguments.path("models_dir", models_dir)
    if isinstance(config, Mapping):
        return _ingle.NativeClient(None, models_dir, _arguments.config_json(config))
    if isinstance(config, str) and _is_config_text(config):
        return _ingle.NativeClient(None, models_dir, _arguments.text("config", config))
    return _ingle.NativeClient(_arguments.path("config", config), models_dir)


Config = Union[str, "os.PathLike[str]", Mapping[str, Any], None]


def _tokenize(
    self: _Resource[Any],
    *,
    model: str = NOT_GIVEN,
    content: str = REQUIRED,
    add_special: bool = NOT_GIVEN,
    parse_special: bool = NOT_GIVEN,
    with_pieces: bool = NOT_GIVEN,
) -> _Call[Any, Any]:
    """Text to token ids with a text model's own tokenizer (llama.cpp server's
    ``/tokenize``). ``add_special`` (default False) adds what the model puts around a prompt
    (BOS); ``parse_special`` (default True) reads special tokens written in the text as
    such; ``with_pieces`` gives each token as a ``TokenPiece`` with its text. ``model``: a
    llama.cpp text model (default: the default chat model)."""
    body = _arguments.body(
        {
            "model": model,
            "content": _arguments.text("content", content),
            "add_special": add_special,
            "parse_special": parse_special,
            "with_pieces": with_pieces,
        }
    )
    kind = TokenizePiecesResponse if with_pieces is True else TokenizeResponse
    return _whole(_json(kind.construct), self._native.call, "tokenize", body)


_Self = TypeVar("_Self")


class _Clients(_Resource[M]):
    """What every client (``OpenAI``, ``AsyncOpenAI``, ``Anthropic``, ``AsyncAnthropic``) shares:
    the engine's client made from ``config`` and ``models_dir``, the ``predictors`` it serves,
    the mode its class names, and the connection arguments of the SDK it stands in for,
    accepted and ignored. A client's resources are made by its `_open`."""

    _MODE: Type[_Mode]  # each client class names its own: Sync or Async, as its base says
    base_url: None = None  # see `OpenAI`

    def __init__(
        self,
        *,
        config: Config = None,
        models_dir: Union[str, "os.PathLike[str]", None] = None,
        predictors: Sequence["_predictors.Predictor"] = (),
        **client_arguments: Any,
    ) -> None:
        native = _native_client(config, models_dir)
        super().__init__(native, cast(Type[M], self._MODE))
        self.predictors = Predictors(native)
        self.predictors.register(*predictors)
        self._open(native)

    def _open(self, native: _ingle.NativeClient) -> None:
        """Makes the client's resources, in its mode."""


class _Closes:
    """``close()`` and ``with`` of a client of the sync SDK."""

    def close(self) -> None:
        """Nothing to release early: models are freed with the last client that uses them."""

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _ClosesAsync:
    """``await close()`` and ``async with`` of a client of the async SDK."""

    async def close(self) -> None:
        """Nothing to release early: models are freed with the last client that uses them."""

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class _Client(_Clients[M]):
    """What ``OpenAI`` and ``AsyncOpenAI`` share: every resource and method, in their mode."""

    def _open(self, native: _ingle.NativeClient) -> None:
        mode = self._mode
        self.chat = Chat(native, mode)
        self.responses = Responses(native, mode)
        self.completions = Completions(native, mode)
        self.embeddings = Embeddings(native, mode)
        self.rerank = Rerank(native, mode)
        self.images = Images(native, mode)
        self.audio = Audio(native, mode)
        self.models = Models(native, mode)
        self.predictions = Predictions(native, mode)

    if TYPE_CHECKING:
        @overload
        def tokenize(self: _Client[Sync], *, model: str = ..., content: str, add_special: bool = ..., parse_special: bool = ..., with_pieces: Literal[False] = ...) -> TokenizeResponse: ...
        @overload
        def tokenize(self: _Client[Sync], *, model: str = ..., content: str, add_special: bool = ..., parse_special: bool = ..., with_pieces: Literal[True]) -> TokenizePiecesResponse: ...
        @overload
        def tokenize(self: _Client[Sync], *, model: str = ..., content: str, add_special: bool = ..., parse_special: bool = ..., with_pieces: bool) -> Union[TokenizeResponse, TokenizePiecesResponse]: ...
        @overload
        def tokenize(self: _Client[Async], *, model: str = ..., content: str, add_special: bool = ..., parse_special: bool = ..., with_pieces: Literal[False] = ...) -> _Awaited[TokenizeResponse]: ...
        @overload
        def tokenize(self: _Client[Async], *, model: str = ..., content: str, add_special: bool = ..., parse_special: bool = ..., with_pieces: Literal[True]) -> _Awaited[TokenizePiecesResponse]: ...
        @overload
        def tokenize(self: _Client[Async], *, model: str = ..., content: str, add_special: bool = ..., parse_special: bool = ..., with_pieces: bool) -> _Awaited[Union[TokenizeResponse, TokenizePiecesResponse]]: ...
        def tokenize(self, **params: Any) -> Any: ...
    else:
        tokenize = _method(_tokenize)

    @_method
    def detokenize(self, *, model: str = NOT_GIVEN, tokens: Sequence[int] = REQUIRED) -> _Call[DetokenizeResponse, DetokenizeResponse]:
        """Token ids back to text (llama.cpp server's ``/detokenize``); an id outside the
        model's vocabulary is a BadRequestError naming it (``tokens[i]``)."""
        body = _arguments.body({"model": model, "tokens": _arguments.required("tokens", tokens)})
        return _whole(_json(DetokenizeResponse.construct), self._native.call, "detokenize", body)

    @_method
    def metrics(self, model: str = REQUIRED) -> _Call[Dict[str, Any], Dict[str, Any]]:
        """Load figures of a model, counted since it loaded: ``active_requests``,
        ``queued_requests``, ``generated_tokens`` (of which ``forced_tokens``: forced by a
        grammar, jump-forward), ``draft_tokens`` and ``accepted_draft_tokens`` (speculative
        decoding), ``prompt_tokens``, ``cancelled_requests``,
        ``kv_cells_used`` / ``kv_cells_total``, ``audio_input_seconds``,
        ``audio_output_seconds``, ``memory_bytes``, and the histograms ``queue_wait``,
        ``time_to_first_token``, ``time_per_output_token`` (``count``, ``sum_seconds``,
        ``buckets``: ``[le, cumulative]``, ``le`` None for +Inf)."""
        read = lambda text: cast(Dict[str, Any], json.loads(text))  # noqa: E731  # an object
        return _whole(read, self._native.metrics, _arguments.text("model", model), cancellable=False)


class OpenAI(_Client[Sync], _Closes):
    """Runs models in this process. ``config``: an ingle TOML config file, the config as a dict
    (``{"predictors": [...]}``) or as TOML text (default: ``$INGLE_CONFIG``, else the default
    model); ``models_dir``: where model files are; ``predictors``: functions of your own to
    serve (``ingle.predictor``).

    The ``openai`` client's connection arguments (``api_key``, ``base_url``, ``timeout``, ...)
    are accepted and ignored, so existing code runs unchanged. ``base_url`` reads ``None``:
    there is no server (frameworks that read it, as openai-agents does, then take the client
    for one that is not OpenAI's)."""

    _MODE = Sync


class AsyncOpenAI(_Client[Async], _ClosesAsync):
    """`OpenAI` for asyncio: the same methods, awaited. The engine works in worker threads, so
    the event loop keeps running; cancelling the awaiting task stops generation."""

    _MODE = Async
