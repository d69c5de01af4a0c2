"""``OpenAI`` and ``AsyncOpenAI``: the ``openai`` client's interface over the in-process engine.

Only conversion happens here: keyword arguments become the OpenAI JSON request, the native
module (``ingle._ingle``) runs it in the Rust core, and the JSON it returns becomes the objects
of ``ingle.types``.
"""

from __future__ import annotations

import json
import os
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Union,
    cast,
    overload,
)

from . import _arguments, _ingle, _predictors, _structured
from ._arguments import NOT_GIVEN, REQUIRED
from ._audio import Audio, AsyncAudio
from ._base import AsyncStream, Stream, _cancellable, _in_thread, _Resource
from ._responses import AsyncResponses, Responses
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


class ChatCompletions(_Resource):
    @overload
    def create(self, *, stream: Literal[True], **params: Any) -> Stream[ChatCompletionChunk]: ...
    @overload
    def create(self, *, stream: Literal[False] = ..., **params: Any) -> ChatCompletion: ...
    @overload
    def create(
        self, *, stream: bool, **params: Any
    ) -> Union[ChatCompletion, Stream[ChatCompletionChunk]]: ...
    def create(
        self, *, stream: bool = False, **params: Any
    ) -> Union[ChatCompletion, Stream[ChatCompletionChunk]]:
        """``model``, ``messages`` and the OpenAI chat parameters (see docs/openai-parameters.md)."""
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            return Stream(self._native.stream("chat.completions.stream", body), ChatCompletionChunk)
        return ChatCompletion.construct(json.loads(self._native.call("chat.completions.create", body)))

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
        return _structured.parsed(json.loads(self._native.call("chat.completions.create", body)), read)


class Chat(_Resource):
    def __init__(self, native: _ingle.NativeClient) -> None:
        super().__init__(native)
        self.completions = ChatCompletions(native)


class Completions(_Resource):
    @overload
    def create(self, *, stream: Literal[True], **params: Any) -> Stream[Completion]: ...
    @overload
    def create(self, *, stream: Literal[False] = ..., **params: Any) -> Completion: ...
    @overload
    def create(self, *, stream: bool, **params: Any) -> Union[Completion, Stream[Completion]]: ...
    def create(self, *, stream: bool = False, **params: Any) -> Union[Completion, Stream[Completion]]:
        """``model``, ``prompt`` and the OpenAI completion parameters."""
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            return Stream(self._native.stream("completions.stream", body), Completion)
        return Completion.construct(json.loads(self._native.call("completions.create", body)))


class Embeddings(_Resource):
    def create(self, **params: Any) -> CreateEmbeddingResponse:
        """``model``, ``input`` (a string or a list of strings), ``dimensions``,
        ``encoding_format`` ("float" or "base64"), ``user``. ``.data[i].embedding`` is a list
        of floats (or a base64 string); ``.to_numpy()`` is every vector as one NumPy array,
        without copying through lists."""
        body = _arguments.body(params)
        return CreateEmbeddingResponse._from_matrix(*self._native.embeddings_create(body))


def _reranked(text: str) -> RerankResponse:
    """A ranking: a RerankResponse, or for a request with ``texts`` (text-embeddings-inference's
    shape) its bare list of ``{"index", "score", "text"}`` dicts."""
    answer = json.loads(text)
    if isinstance(answer, list):
        # `create` is typed for `documents`; TEI's `texts` shape answers its list as it is.
        return cast(RerankResponse, answer)
    return RerankResponse.construct(answer)


class Rerank(_Resource):
    def create(self, **params: Any) -> RerankResponse:
        """``model``, ``query``, ``documents`` (strings, or dicts with a ``text``), ``top_n``,
        ``return_documents`` (default True): the documents ranked by relevance to the query,
        most relevant first (Jina's and Cohere's rerank shape). An embedding model scores by
        cosine similarity; a predictor annotated ``RerankQuery``, ``RerankDocuments`` and
        ``RerankScores`` scores itself. With ``texts`` instead of ``documents``
        (text-embeddings-inference's shape) the answer is its list of dicts."""
        body = _arguments.body(params)
        return _reranked(self._native.call("rerank.create", body))


def _tokenize_body(
    model: str, content: str, add_special: bool, parse_special: bool, with_pieces: bool
) -> str:
    return _arguments.body(
        {
            "model": model,
            "content": _arguments.text("content", content),
            "add_special": add_special,
            "parse_special": parse_special,
            "with_pieces": with_pieces,
        }
    )


def _tokenized(text: str, with_pieces: bool) -> Union[TokenizeResponse, TokenizePiecesResponse]:
    answer = cast(Dict[str, Any], json.loads(text))
    if with_pieces is True:
        return TokenizePiecesResponse.construct(answer)
    return TokenizeResponse.construct(answer)


def _detokenize_body(model: str, tokens: Sequence[int]) -> str:
    return _arguments.body({"model": model, "tokens": _arguments.required("tokens", tokens)})


class Images(_Resource):
    def generate(
        self, *, stream: bool = False, **params: Any
    ) -> Union[ImagesResponse, Stream[ImageGenStreamEvent]]:
        """``model``, ``prompt``, ``n``, ``size`` (``"WIDTHxHEIGHT"`` or ``"auto"``),
        ``output_format`` (png, jpeg, webp), ``output_compression``, ``background``,
        ``quality``, ``partial_images``: images made by a predictor annotated ``ImageWidth``,
        ``ImageHeight`` or ``ImageCount``, as ``b64_json``. ``stream=True`` gives its
        ``image_generation.partial_image`` and ``image_generation.completed`` events."""
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            return Stream(self._native.stream("images.stream", body), ImageGenStreamEvent)
        return ImagesResponse.construct(json.loads(self._native.call("images.generate", body)))


class Models(_Resource):
    def list(self) -> SyncPage[Model]:
        return SyncPage.construct(json.loads(self._native.call("models.list", "{}")))

    def retrieve(self, model: str = REQUIRED) -> Model:
        text = self._native.call("models.retrieve", _arguments.named(model=_arguments.text("model", model)))
        return Model.construct(json.loads(text))

    def pull(
        self, model: str = REQUIRED, *, progress: Optional[Callable[[PullProgress], Any]] = None
    ) -> PullResult:
        """Downloads ``model`` (a tag of ingle's catalog: ``ingle models`` lists them; or a
        Hugging Face reference, ``hf.co/ORG/REPO[:QUANT][@REVISION]``, into the Hub's shared
        cache, where ``huggingface_hub`` finds it too) and what it needs into the models directory, each file verified (sha256) and written atomically;
        an interrupted pull resumes. Files already there are re-hashed, a corrupted one fetched
        again; the model is then served by this client. ``progress`` receives a
        ``PullProgress`` per step; returning ``False`` (or raising, or Ctrl-C) stops the pull.
        ingle's own method (as Ollama's ``pull``): OpenAI's models are not downloaded."""
        callback = None
        if progress is not None:
            if not callable(progress):
                raise TypeError("progress must be a callable taking a PullProgress")

            def callback(event_json: str) -> Any:
                return progress(PullProgress.construct(json.loads(event_json)))

        text = self._native.models_pull(_arguments.text("model", model), callback)
        return PullResult.construct(json.loads(text))

    def catalog(self) -> List[Dict[str, Any]]:
        """What ``pull`` can download: each entry's ``tag``, ``kind``, ``description``,
        ``licence``, ``size`` (bytes), ``cached`` (its files are in the models directory),
        ``requires`` and ``optional`` (left out of ``ingle pull --all``). ingle's own method."""
        return cast(List[Dict[str, Any]], json.loads(self._native.models_catalog()))

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
        return Prediction.construct(json.loads(text))

    def stream(
        self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None
    ) -> Stream[Prediction]:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        return Stream(self._native.predictions_stream(tag, body, raw), Prediction)


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


class OpenAI:
    """Runs models in this process. ``config``: an ingle TOML config file, the config as a dict
    (``{"predictors": [...]}``) or as TOML text (default: ``$INGLE_CONFIG``, else the default
    model); ``models_dir``: where model files are.

    The ``openai`` client's connection arguments (``api_key``, ``base_url``, ``timeout``, ...)
    are accepted and ignored, so existing code runs unchanged. ``base_url`` reads ``None``:
    there is no server (frameworks that read it, as openai-agents does, then take the client
    for one that is not OpenAI's)."""

    base_url: None = None

    def __init__(
        self,
        *,
        config: Union[str, "os.PathLike[str]", Mapping[str, Any], None] = None,
        models_dir: Union[str, "os.PathLike[str]", None] = None,
        predictors: Sequence["_predictors.Predictor"] = (),
        **openai_arguments: Any,
    ) -> None:
        self._native = _native_client(config, models_dir)
        self.predictors = Predictors(self._native)
        self.predictors.register(*predictors)
        self.chat = Chat(self._native)
        self.responses = Responses(self._native)
        self.completions = Completions(self._native)
        self.embeddings = Embeddings(self._native)
        self.rerank = Rerank(self._native)
        self.images = Images(self._native)
        self.audio = Audio(self._native)
        self.models = Models(self._native)
        self.predictions = Predictions(self._native)

    @overload
    def tokenize(
        self,
        *,
        model: str = ...,
        content: str,
        add_special: bool = ...,
        parse_special: bool = ...,
        with_pieces: Literal[False] = ...,
    ) -> TokenizeResponse: ...
    @overload
    def tokenize(
        self,
        *,
        model: str = ...,
        content: str,
        add_special: bool = ...,
        parse_special: bool = ...,
        with_pieces: Literal[True],
    ) -> TokenizePiecesResponse: ...
    @overload
    def tokenize(
        self,
        *,
        model: str = ...,
        content: str,
        add_special: bool = ...,
        parse_special: bool = ...,
        with_pieces: bool,
    ) -> Union[TokenizeResponse, TokenizePiecesResponse]: ...
    def tokenize(
        self,
        *,
        model: str = NOT_GIVEN,
        content: str = REQUIRED,
        add_special: bool = NOT_GIVEN,
        parse_special: bool = NOT_GIVEN,
        with_pieces: bool = NOT_GIVEN,
    ) -> Union[TokenizeResponse, TokenizePiecesResponse]:
        """Text to token ids with a text model's own tokenizer (llama.cpp server's
        ``/tokenize``). ``add_special`` (default False) adds what the model puts around a prompt
        (BOS); ``parse_special`` (default True) reads special tokens written in the text as
        such; ``with_pieces`` gives each token as a ``TokenPiece`` with its text. ``model``: a
        llama.cpp text model (default: the default chat model)."""
        body = _tokenize_body(model, content, add_special, parse_special, with_pieces)
        return _tokenized(self._native.call("tokenize", body), with_pieces)

    def detokenize(
        self, *, model: str = NOT_GIVEN, tokens: Sequence[int] = REQUIRED
    ) -> DetokenizeResponse:
        """Token ids back to text (llama.cpp server's ``/detokenize``); an id outside the
        model's vocabulary is a BadRequestError naming it (``tokens[i]``)."""
        text = self._native.call("detokenize", _detokenize_body(model, tokens))
        return DetokenizeResponse.construct(json.loads(text))

    def metrics(self, model: str = REQUIRED) -> Dict[str, Any]:
        """Load figures of a model, counted since it loaded: ``active_requests``,
        ``queued_requests``, ``generated_tokens`` (of which ``forced_tokens``: forced by a
        grammar, jump-forward), ``draft_tokens`` and ``accepted_draft_tokens`` (speculative
        decoding), ``prompt_tokens``, ``cancelled_requests``,
        ``kv_cells_used`` / ``kv_cells_total``, ``audio_input_seconds``,
        ``audio_output_seconds``, ``memory_bytes``, and the histograms ``queue_wait``,
        ``time_to_first_token``, ``time_per_output_token`` (``count``, ``sum_seconds``,
        ``buckets``: ``[le, cumulative]``, ``le`` None for +Inf)."""
        text = self._native.metrics(_arguments.text("model", model))
        return cast(Dict[str, Any], json.loads(text))  # a JSON object

    def close(self) -> None:
        """Nothing to release early: models are freed with the last client that uses them."""

    def __enter__(self) -> "OpenAI":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncChatCompletions(_Resource):
    @overload
    async def create(
        self, *, stream: Literal[True], **params: Any
    ) -> AsyncStream[ChatCompletionChunk]: ...
    @overload
    async def create(self, *, stream: Literal[False] = ..., **params: Any) -> ChatCompletion: ...
    @overload
    async def create(
        self, *, stream: bool, **params: Any
    ) -> Union[ChatCompletion, AsyncStream[ChatCompletionChunk]]: ...
    async def create(
        self, *, stream: bool = False, **params: Any
    ) -> Union[ChatCompletion, AsyncStream[ChatCompletionChunk]]:
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            native = await _in_thread(self._native.stream, "chat.completions.stream", body)
            return AsyncStream(native, ChatCompletionChunk)
        text = await _cancellable(self._native.call, "chat.completions.create", body)
        return ChatCompletion.construct(json.loads(text))

    async def parse(self, *, response_format: Any = NOT_GIVEN, **params: Any) -> ParsedChatCompletion:
        """As ``OpenAI().chat.completions.parse``."""
        if params.get("stream"):
            raise TypeError("parse() does not stream; use create(stream=True)")
        fmt, read = _structured.response_format_of(response_format)
        if fmt is not NOT_GIVEN:
            params["response_format"] = fmt
        text = await _cancellable(self._native.call, "chat.completions.create", _arguments.body(params))
        return _structured.parsed(json.loads(text), read)


class AsyncChat(_Resource):
    def __init__(self, native: _ingle.NativeClient) -> None:
        super().__init__(native)
        self.completions = AsyncChatCompletions(native)


class AsyncCompletions(_Resource):
    @overload
    async def create(self, *, stream: Literal[True], **params: Any) -> AsyncStream[Completion]: ...
    @overload
    async def create(self, *, stream: Literal[False] = ..., **params: Any) -> Completion: ...
    @overload
    async def create(
        self, *, stream: bool, **params: Any
    ) -> Union[Completion, AsyncStream[Completion]]: ...
    async def create(
        self, *, stream: bool = False, **params: Any
    ) -> Union[Completion, AsyncStream[Completion]]:
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            native = await _in_thread(self._native.stream, "completions.stream", body)
            return AsyncStream(native, Completion)
        text = await _cancellable(self._native.call, "completions.create", body)
        return Completion.construct(json.loads(text))


class AsyncEmbeddings(_Resource):
    async def create(self, **params: Any) -> CreateEmbeddingResponse:
        """`Embeddings.create`, run in a worker thread."""
        body = _arguments.body(params)
        result = await _in_thread(self._native.embeddings_create, body)
        return CreateEmbeddingResponse._from_matrix(*result)


class AsyncModels(_Resource):
    # In a worker thread, as every call that may read the disk: listing checks the models'
    # files and scans the Hugging Face cache.
    async def list(self) -> SyncPage[Model]:
        text = await _in_thread(self._native.call, "models.list", "{}")
        return SyncPage.construct(json.loads(text))

    async def retrieve(self, model: str = REQUIRED) -> Model:
        body = _arguments.named(model=_arguments.text("model", model))
        text = await _in_thread(self._native.call, "models.retrieve", body)
        return Model.construct(json.loads(text))

    async def pull(
        self, model: str = REQUIRED, *, progress: Optional[Callable[[PullProgress], Any]] = None
    ) -> PullResult:
        """Downloads ``model`` in a worker thread (see ``Models.pull``); ``progress`` is called
        from that thread."""
        return await _in_thread(lambda: Models(self._native).pull(model, progress=progress))

    async def catalog(self) -> List[Dict[str, Any]]:
        """What ``pull`` can download (see ``Models.catalog``)."""
        text = await _in_thread(self._native.models_catalog)  # `cached` looks at the disk
        return cast(List[Dict[str, Any]], json.loads(text))

    async def unload(self, model: str = REQUIRED) -> bool:
        """Frees the model's memory; the next request loads it again (see ``Models.unload``)."""
        return await _in_thread(self._native.models_unload, _arguments.text("model", model))

    async def is_loaded(self, model: str = REQUIRED) -> bool:
        # A tag not yet known is looked for in the Hugging Face cache.
        return await _in_thread(self._native.models_is_loaded, _arguments.text("model", model))


class AsyncPredictions(_Resource):
    async def create(
        self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None
    ) -> Prediction:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        text = await _cancellable(self._native.predictions_create, tag, body, raw)
        return Prediction.construct(json.loads(text))

    async def stream(
        self, *, tag: str = REQUIRED, inputs: Optional[Dict[str, Any]] = None
    ) -> AsyncStream[Prediction]:
        tag, (body, raw) = _arguments.text("tag", tag), _predictors._split_inputs(inputs)
        native = await _in_thread(self._native.predictions_stream, tag, body, raw)
        return AsyncStream(native, Prediction)


class AsyncRerank(_Resource):
    async def create(self, **params: Any) -> RerankResponse:
        """`Rerank.create`, run in a worker thread."""
        body = _arguments.body(params)
        text = await _cancellable(self._native.call, "rerank.create", body)
        return _reranked(text)


class AsyncImages(_Resource):
    async def generate(
        self, *, stream: bool = False, **params: Any
    ) -> Union[ImagesResponse, AsyncStream[ImageGenStreamEvent]]:
        """`Images.generate`, the predictor run in a worker thread."""
        body = _arguments.body(params)
        if _arguments.stream_flag(stream):
            native = await _in_thread(self._native.stream, "images.stream", body)
            return AsyncStream(native, ImageGenStreamEvent)
        text = await _cancellable(self._native.call, "images.generate", body)
        return ImagesResponse.construct(json.loads(text))


class AsyncOpenAI:
    """`OpenAI` for asyncio: the same methods, awaited. The engine works in worker threads, so
    the event loop keeps running."""

    base_url: None = None  # as `OpenAI.base_url`

    def __init__(
        self,
        *,
        config: Union[str, "os.PathLike[str]", Mapping[str, Any], None] = None,
        models_dir: Union[str, "os.PathLike[str]", None] = None,
        predictors: Sequence["_predictors.Predictor"] = (),
        **openai_arguments: Any,
    ) -> None:
        self._native = _native_client(config, models_dir)
        self.predictors = Predictors(self._native)
        self.predictors.register(*predictors)
        self.chat = AsyncChat(self._native)
        self.responses = AsyncResponses(self._native)
        self.completions = AsyncCompletions(self._native)
        self.embeddings = AsyncEmbeddings(self._native)
        self.rerank = AsyncRerank(self._native)
        self.images = AsyncImages(self._native)
        self.audio = AsyncAudio(self._native)
        self.models = AsyncModels(self._native)
        self.predictions = AsyncPredictions(self._native)

    @overload
    async def tokenize(
        self,
        *,
        model: str = ...,
        content: str,
        add_special: bool = ...,
        parse_special: bool = ...,
        with_pieces: Literal[False] = ...,
    ) -> TokenizeResponse: ...
    @overload
    async def tokenize(
        self,
        *,
        model: str = ...,
        content: str,
        add_special: bool = ...,
        parse_special: bool = ...,
        with_pieces: Literal[True],
    ) -> TokenizePiecesResponse: ...
    @overload
    async def tokenize(
        self,
        *,
        model: str = ...,
        content: str,
        add_special: bool = ...,
        parse_special: bool = ...,
        with_pieces: bool,
    ) -> Union[TokenizeResponse, TokenizePiecesResponse]: ...
    async def tokenize(
        self,
        *,
        model: str = NOT_GIVEN,
        content: str = REQUIRED,
        add_special: bool = NOT_GIVEN,
        parse_special: bool = NOT_GIVEN,
        with_pieces: bool = NOT_GIVEN,
    ) -> Union[TokenizeResponse, TokenizePiecesResponse]:
        """`OpenAI.tokenize`, in a worker thread."""
        body = _tokenize_body(model, content, add_special, parse_special, with_pieces)
        text = await _cancellable(self._native.call, "tokenize", body)
        return _tokenized(text, with_pieces)

    async def detokenize(
        self, *, model: str = NOT_GIVEN, tokens: Sequence[int] = REQUIRED
    ) -> DetokenizeResponse:
        """`OpenAI.detokenize`, in a worker thread."""
        body = _detokenize_body(model, tokens)
        text = await _cancellable(self._native.call, "detokenize", body)
        return DetokenizeResponse.construct(json.loads(text))

    async def metrics(self, model: str = REQUIRED) -> Dict[str, Any]:
        text = await _in_thread(self._native.metrics, _arguments.text("model", model))
        return cast(Dict[str, Any], json.loads(text))  # a JSON object

    async def close(self) -> None:
        """Nothing to release early: models are freed with the last client that uses them."""

    async def __aenter__(self) -> "AsyncOpenAI":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
