"""Response objects with the attribute names and nesting of the ``openai`` package's types.

They are plain classes, not pydantic models, so ingle has no dependencies; ``model_dump()``
returns the OpenAI JSON as a dict, so ``openai.types.chat.ChatCompletion.model_validate(
r.model_dump())`` works when you need the real pydantic type.
"""

from __future__ import annotations

import json
from typing import (
    Any,
    ClassVar,
    Dict,
    Generic,
    Iterator,
    List,
    Optional,
    Tuple,
    Type,
    TypedDict,
    TypeVar,
    Union,
    cast,
)

__all__ = [
    "BaseModel",
    "CompletionUsage",
    "ChatCompletionMessage",
    "ChatCompletionMessageParam",
    "Choice",
    "ChatCompletion",
    "ChoiceDelta",
    "ChunkChoice",
    "ChatCompletionChunk",
    "CompletionChoice",
    "Completion",
    "Model",
    "SyncPage",
    "Prediction",
    "Embedding",
    "EmbeddingUsage",
    "CreateEmbeddingResponse",
    "RerankDocument",
    "RerankResult",
    "RerankUsage",
    "RerankResponse",
    "TokenPiece",
    "TokenizeResponse",
    "TokenizePiecesResponse",
    "DetokenizeResponse",
    "TranscriptionUsage",
    "Transcription",
    "TranscriptionSegment",
    "TranscriptionWord",
    "TranscriptionVerbose",
    "TranscriptionTextDeltaEvent",
    "TranscriptionTextDoneEvent",
    "TranscriptionStreamEvent",
    "Translation",
    "TranslationVerbose",
    "Function",
    "ChatCompletionMessageToolCall",
    "ChoiceDeltaToolCallFunction",
    "ChoiceDeltaToolCall",
    "TopLogprob",
    "ChatCompletionTokenLogprob",
    "ChoiceLogprobs",
    "Logprobs",
    "ParsedChatCompletionMessage",
    "ParsedChoice",
    "ParsedChatCompletion",
    "PromptTokensDetails",
    "PullProgress",
    "PulledFile",
    "PullResult",
    "Response",
    "ResponseOutputItem",
    "ResponseOutputText",
    "ResponseUsage",
    "ResponseError",
    "InputTokenCountResponse",
    "ResponseStreamEvent",
    "ResponseInputItemList",
    "ResponseDeleted",
    "Image",
    "ImagesResponse",
    "ImageGenStreamEvent",
]


_Model = TypeVar("_Model", bound="BaseModel")


class BaseModel:
    """Attribute access over an OpenAI JSON object. Fields a response leaves out are ``None``;
    fields this version does not know are kept as attributes too."""

    _nested: ClassVar[Dict[str, type]] = {}

    def __init__(self, **data: Any) -> None:
        for name in self._field_names():
            setattr(self, name, None)
        for name, value in data.items():
            setattr(self, name, _convert(self._nested.get(name), value))

    @classmethod
    def _field_names(cls) -> List[str]:
        names: List[str] = []
        for klass in reversed(cls.__mro__):
            for name in getattr(klass, "__annotations__", {}):
                if not name.startswith("_") and name not in names:
                    names.append(name)
        return names

    @classmethod
    def construct(cls: Type[_Model], data: Dict[str, Any]) -> _Model:
        """Builds the object from its JSON (a dict), nested objects included."""
        return cls(**data)

    def model_dump(self, *, exclude_none: bool = False) -> Dict[str, Any]:
        """The OpenAI JSON of this object, as a dict."""
        out: Dict[str, Any] = {}
        for name, value in self._fields().items():
            if value is None and exclude_none:
                continue
            out[name] = _dump(value, exclude_none)
        return out

    def model_dump_json(self, *, indent: Optional[int] = None, exclude_none: bool = False) -> str:
        """The OpenAI JSON of this object, as text."""
        return json.dumps(self.model_dump(exclude_none=exclude_none), indent=indent)

    def to_dict(self) -> Dict[str, Any]:
        """Like ``openai``'s ``to_dict()``: the JSON without unset (``None``) fields."""
        return self.model_dump(exclude_none=True)

    def to_json(self, *, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def _fields(self) -> Dict[str, Any]:
        """The JSON fields: every attribute but private ones (``_name``)."""
        return {name: value for name, value in vars(self).items() if not name.startswith("_")}

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self._fields().items())
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, like pydantic models


def _convert(cls: Optional[type], value: Any) -> Any:
    if cls is None or value is None:
        return value
    if isinstance(value, list):
        return [_convert(cls, item) for item in value]
    if isinstance(value, dict):
        return cls(**value)
    return value


def _dump(value: Any, exclude_none: bool) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=exclude_none)
    if isinstance(value, list):
        return [_dump(item, exclude_none) for item in value]
    return value


class PromptTokensDetails(BaseModel):
    """``cached_tokens``: prompt tokens whose KV cache was reused from an earlier request
    sharing the prefix (ingle's prompt cache)."""

    cached_tokens: Optional[int]
    audio_tokens: Optional[int]


class CompletionUsage(BaseModel):
    completion_tokens: int
    prompt_tokens: int
    total_tokens: int
    completion_tokens_details: Optional[Dict[str, Any]]
    prompt_tokens_details: Optional[PromptTokensDetails]
    _nested = {"prompt_tokens_details": PromptTokensDetails}


class Function(BaseModel):
    """``arguments`` is JSON text, as OpenAI sends it."""

    arguments: str
    name: str


class ChatCompletionMessageToolCall(BaseModel):
    id: str
    function: Function
    type: str
    _nested = {"function": Function}


class TopLogprob(BaseModel):
    token: str
    bytes: Optional[List[int]]
    logprob: float


class ChatCompletionTokenLogprob(BaseModel):
    token: str
    bytes: Optional[List[int]]
    logprob: float
    top_logprobs: List[TopLogprob]
    _nested = {"top_logprobs": TopLogprob}


class ChoiceLogprobs(BaseModel):
    """``choices[i].logprobs`` of a chat completion (and of each chunk)."""

    content: Optional[List[ChatCompletionTokenLogprob]]
    refusal: Optional[List[ChatCompletionTokenLogprob]]
    _nested = {"content": ChatCompletionTokenLogprob, "refusal": ChatCompletionTokenLogprob}


class Logprobs(BaseModel):
    """``choices[i].logprobs`` of a legacy completion (``openai.types.completion_choice.Logprobs``)."""

    text_offset: Optional[List[int]]
    token_logprobs: Optional[List[float]]
    tokens: Optional[List[str]]
    top_logprobs: Optional[List[Dict[str, float]]]


class ChatCompletionMessage(BaseModel):
    content: Optional[str]
    refusal: Optional[str]
    role: str
    reasoning_content: Optional[str]
    annotations: Optional[List[Any]]
    audio: Optional[Any]
    function_call: Optional[Any]
    tool_calls: Optional[List[ChatCompletionMessageToolCall]]
    _nested = {"tool_calls": ChatCompletionMessageToolCall}


class ChatCompletionMessageParam(TypedDict, total=False):
    """A chat message as a request gives it, and as a chat predictor receives it:
    ``{"role": ..., "content": ...}`` (``openai.types.chat.ChatCompletionMessageParam``)."""

    role: str
    content: str


class Choice(BaseModel):
    """One choice of a ``ChatCompletion`` (``openai.types.chat.chat_completion.Choice``)."""

    finish_reason: str
    index: int
    logprobs: Optional[ChoiceLogprobs]
    message: ChatCompletionMessage
    _nested = {"message": ChatCompletionMessage, "logprobs": ChoiceLogprobs}


class ChatCompletion(BaseModel):
    id: str
    choices: List[Choice]
    created: int
    model: str
    object: str
    service_tier: Optional[str]
    system_fingerprint: Optional[str]
    usage: Optional[CompletionUsage]
    _nested = {"choices": Choice, "usage": CompletionUsage}


class ParsedChatCompletionMessage(ChatCompletionMessage):
    """A message of ``chat.completions.parse``: ``parsed`` is the content read into the
    ``response_format`` type (``None`` when the reply is not content)."""

    parsed: Optional[Any]


class ParsedChoice(Choice):
    message: ParsedChatCompletionMessage
    _nested = {"message": ParsedChatCompletionMessage, "logprobs": ChoiceLogprobs}


class ParsedChatCompletion(ChatCompletion):
    # A list of the subclass, as in openai's ParsedChatCompletion (which waives this check too).
    choices: List[ParsedChoice]  # type: ignore[assignment]
    _nested = {"choices": ParsedChoice, "usage": CompletionUsage}


class ChoiceDeltaToolCallFunction(BaseModel):
    arguments: Optional[str]
    name: Optional[str]


class ChoiceDeltaToolCall(BaseModel):
    """A piece of a streamed call: ``id``, ``type`` and ``function.name`` in its first delta,
    ``function.arguments`` fragments after; ``index`` says which call."""

    index: int
    id: Optional[str]
    function: Optional[ChoiceDeltaToolCallFunction]
    type: Optional[str]
    _nested = {"function": ChoiceDeltaToolCallFunction}


class ChoiceDelta(BaseModel):
    content: Optional[str]
    reasoning_content: Optional[str]
    function_call: Optional[Any]
    refusal: Optional[str]
    role: Optional[str]
    tool_calls: Optional[List[ChoiceDeltaToolCall]]
    _nested = {"tool_calls": ChoiceDeltaToolCall}


class ChunkChoice(BaseModel):
    """One choice of a ``ChatCompletionChunk``
    (``openai.types.chat.chat_completion_chunk.Choice``)."""

    delta: ChoiceDelta
    finish_reason: Optional[str]
    index: int
    logprobs: Optional[ChoiceLogprobs]
    _nested = {"delta": ChoiceDelta, "logprobs": ChoiceLogprobs}


class ChatCompletionChunk(BaseModel):
    id: str
    choices: List[ChunkChoice]
    created: int
    model: str
    object: str
    service_tier: Optional[str]
    system_fingerprint: Optional[str]
    usage: Optional[CompletionUsage]
    _nested = {"choices": ChunkChoice, "usage": CompletionUsage}


class CompletionChoice(BaseModel):
    finish_reason: Optional[str]
    index: int
    logprobs: Optional[Logprobs]
    text: str
    _nested = {"logprobs": Logprobs}


class Completion(BaseModel):
    id: str
    choices: List[CompletionChoice]
    created: int
    model: str
    object: str
    system_fingerprint: Optional[str]
    usage: Optional[CompletionUsage]
    _nested = {"choices": CompletionChoice, "usage": CompletionUsage}


class Model(BaseModel):
    id: str
    created: int
    object: str
    owned_by: str
    context_length: Optional[int]
    """The tokens its context holds, prompt and answer together: a loaded chat model's, or what
    its predictor declares (``ChatMessages(context_length=...)``); ``None`` when not known."""


class PullProgress(BaseModel):
    """One progress event of ``client.models.pull``: ``status`` is ``waiting`` (for another pull
    of the same file to end), ``verifying`` (hashing a file already there, or a downloaded one),
    ``downloading`` or ``success``; ``completed`` of ``total`` bytes of ``file`` (a path inside
    the models directory)."""

    status: str
    tag: str
    file: Optional[str]
    completed: int
    total: int


class PulledFile(BaseModel):
    tag: str
    path: str
    size: int
    sha256: str
    fetched: bool


class PullResult(BaseModel):
    """What ``client.models.pull`` did: every file of the model (and of what it needs, such as
    ONNX Runtime), whether each was downloaded or already there, all verified."""

    tag: str
    status: str
    models_dir: str
    files: List[PulledFile]
    downloaded_bytes: int
    #: What to know (a Hugging Face repo's vision projector left aside, a cached copy used).
    notes: List[str]
    _nested = {"files": PulledFile}


class Embedding(BaseModel):
    """One vector (``openai.types.Embedding``): a list of floats, or a base64 string of its
    little-endian float32 bytes when the request asked for ``encoding_format="base64"``."""

    embedding: Union[List[float], str]
    index: int
    object: str


class EmbeddingUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class RerankDocument(BaseModel):
    text: str


class RerankResult(BaseModel):
    """One ranked document: ``index`` in the request's ``documents``, ``relevance_score``
    (an embedding model's cosine similarity, from -1 to 1, or a reranking predictor's score),
    and ``document`` unless ``return_documents=False``."""

    index: int
    relevance_score: float
    document: Optional[RerankDocument]
    _nested = {"document": RerankDocument}


class RerankUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class RerankResponse(BaseModel):
    """What ``client.rerank.create`` returns, in Jina's and Cohere's shape: ``results`` most
    relevant first."""

    id: str
    model: str
    results: List[RerankResult]
    usage: RerankUsage
    _nested = {"results": RerankResult, "usage": RerankUsage}


class CreateEmbeddingResponse(BaseModel):
    """What ``client.embeddings.create`` returns (``openai.types.CreateEmbeddingResponse``).

    ``to_numpy()`` gives every vector as one ``(len(data), dims)`` float32 NumPy array that
    views the engine's output buffer: no copy, and no detour through Python lists."""

    data: List[Embedding]
    model: str
    object: str
    usage: EmbeddingUsage
    _nested = {"data": Embedding, "usage": EmbeddingUsage}
    # (matrix, rows, dims) of `_from_matrix`, for `to_numpy`; unset on one made otherwise.
    _matrix: Tuple[bytes, int, int]

    @classmethod
    def _from_matrix(
        cls, model: str, rows: int, dims: int, prompt_tokens: int, base64: bool, matrix: bytes
    ) -> "CreateEmbeddingResponse":
        floats = memoryview(matrix).cast("f")
        data = []
        for i in range(rows):
            row = floats[i * dims : (i + 1) * dims]
            # A format "f" view holds floats (typeshed types every `tolist()` as ints).
            vector: Union[List[float], str] = (
                _base64_le(row) if base64 else cast(List[float], row.tolist())
            )
            data.append(Embedding(object="embedding", index=i, embedding=vector))
        response = cls(
            object="list",
            data=data,
            model=model,
            usage=EmbeddingUsage(prompt_tokens=prompt_tokens, total_tokens=prompt_tokens),
        )
        response._matrix = (matrix, rows, dims)  # private: not part of the OpenAI JSON
        return response

    def to_numpy(self) -> Any:
        """The vectors as a read-only ``numpy.ndarray`` of shape ``(rows, dims)``, dtype
        float32, sharing memory with the engine's output (needs ``numpy``)."""
        from .._response import _numpy

        numpy = _numpy()
        matrix = getattr(self, "_matrix", None)
        if matrix is None:
            raise ValueError("this response was not made by ingle's embeddings.create")
        raw, rows, dims = matrix
        return numpy.frombuffer(raw, dtype=numpy.float32).reshape(rows, dims)


def _base64_le(floats: memoryview[float]) -> str:
    """Base64 of float32 values as little-endian bytes (OpenAI's ``encoding_format="base64"``)."""
    import array
    import base64
    import sys

    if sys.byteorder == "little":
        return base64.b64encode(floats).decode("ascii")
    values = array.array("f", floats)
    values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


class TranscriptionUsage(BaseModel):
    """``{"type": "duration", "seconds": ...}``: the seconds of audio transcribed
    (``openai.types.audio.transcription.UsageDuration``)."""

    type: str
    seconds: float


class Transcription(BaseModel):
    """What ``client.audio.transcriptions.create`` returns for ``response_format="json"`` (the
    default): ``openai.types.audio.Transcription``."""

    text: str
    languages: Optional[List[Any]]
    logprobs: Optional[List[Any]]
    usage: Optional[TranscriptionUsage]
    _nested = {"usage": TranscriptionUsage}


class TranscriptionSegment(BaseModel):
    """A segment of a ``TranscriptionVerbose`` (``openai.types.audio.TranscriptionSegment``):
    its times in seconds, text, tokens and Whisper's scores."""

    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: List[int]
    temperature: float
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float


class TranscriptionWord(BaseModel):
    """A word with its times in seconds (``openai.types.audio.TranscriptionWord``)."""

    word: str
    start: float
    end: float


class TranscriptionVerbose(BaseModel):
    """``response_format="verbose_json"`` (``openai.types.audio.TranscriptionVerbose``):
    ``segments`` unless ``timestamp_granularities`` leaves ``"segment"`` out, ``words`` when
    it asks for ``"word"``. ``language`` is the English name of the audio's language (the one
    given as ``language``, or the one a multilingual model detected: ``"french"``). The body's
    ``task`` (``"transcribe"``) is kept as an attribute too, as ``openai`` keeps it."""

    language: str
    duration: float
    text: str
    segments: Optional[List[TranscriptionSegment]]
    words: Optional[List[TranscriptionWord]]
    usage: Optional[TranscriptionUsage]
    _nested = {
        "segments": TranscriptionSegment,
        "words": TranscriptionWord,
        "usage": TranscriptionUsage,
    }


class TranscriptionTextDeltaEvent(BaseModel):
    """``{"type": "transcript.text.delta", "delta"}``: the text of the next segment
    (``openai.types.audio.TranscriptionTextDeltaEvent``)."""

    type: str
    delta: str
    logprobs: Optional[List[Any]]
    segment_id: Optional[str]


class TranscriptionTextDoneEvent(BaseModel):
    """``{"type": "transcript.text.done", "text", "usage"}``: the last event of a stream, with
    the whole text (``openai.types.audio.TranscriptionTextDoneEvent``; ``usage`` is of the
    ``duration`` kind, as in ``Transcription``)."""

    type: str
    text: str
    languages: Optional[List[Any]]
    logprobs: Optional[List[Any]]
    usage: Optional[TranscriptionUsage]
    _nested = {"usage": TranscriptionUsage}


TranscriptionStreamEvent = Union[TranscriptionTextDeltaEvent, TranscriptionTextDoneEvent]


class _TranscriptionStreamEvents:
    """The event class of a transcription ``Stream``: builds each event by its ``type``."""

    @staticmethod
    def construct(data: Dict[str, Any]) -> TranscriptionStreamEvent:
        if data.get("type") == "transcript.text.done":
            return TranscriptionTextDoneEvent.construct(data)
        return TranscriptionTextDeltaEvent.construct(data)


class Translation(BaseModel):
    """What ``client.audio.translations.create`` returns for ``response_format="json"`` (the
    default): the English text alone (``openai.types.audio.Translation``)."""

    text: str


class TranslationVerbose(BaseModel):
    """``response_format="verbose_json"`` of ``audio.translations``
    (``openai.types.audio.TranslationVerbose``): ``language`` is the output's, ``"english"``;
    ``segments`` unless ``timestamp_granularities`` leaves ``"segment"`` out, and ``words``
    (ingle's, as in ``TranscriptionVerbose``) when it asks for ``"word"``. The body's ``task``
    (``"translate"``) is kept as an attribute too, as ``openai`` keeps it."""

    language: str
    duration: float
    text: str
    segments: Optional[List[TranscriptionSegment]]
    words: Optional[List[TranscriptionWord]]
    _nested = {"segments": TranscriptionSegment, "words": TranscriptionWord}


class Prediction(BaseModel):
    """A run of a predictor: ``results`` in the order of its signature's outputs, ``latency`` in
    milliseconds."""

    id: str
    tag: str
    created: int
    results: Optional[List[Any]]
    latency: float
    error: Optional[Dict[str, Any]]
    logs: Optional[str]


T = TypeVar("T")


class SyncPage(BaseModel, Generic[T]):
    """A list response (``client.models.list()``): iterate it, or read ``.data``."""

    data: List[T]
    object: str
    _nested = {"data": Model}

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def has_next_page(self) -> bool:
        return False


# --- The Responses API ----------------------------------------------------------------------


class ResponseOutputText(BaseModel):
    """A text part: ``output_text`` of an output message (``input_text`` of an input one)."""

    type: str
    text: str
    annotations: Optional[List[Any]]


class ResponseOutputItem(BaseModel):
    """An item of ``response.output`` (or of its input): a ``message`` (``role``, ``content``
    parts), a ``function_call`` (``call_id``, ``name``, ``arguments`` as JSON text) or a
    ``function_call_output`` (``call_id``, ``output``)."""

    id: str
    type: str
    status: Optional[str]
    role: Optional[str]
    content: Optional[List[ResponseOutputText]]
    call_id: Optional[str]
    name: Optional[str]
    arguments: Optional[str]
    output: Optional[str]
    _nested = {"content": ResponseOutputText}


class _InputTokensDetails(BaseModel):
    cached_tokens: int
    cache_write_tokens: int


class ResponseUsage(BaseModel):
    """``input_tokens_details.cached_tokens``: input tokens whose KV came from the prompt cache
    (a conversation continued with ``previous_response_id`` reuses its stored prefix)."""

    input_tokens: int
    input_tokens_details: _InputTokensDetails
    output_tokens: int
    output_tokens_details: Optional[Dict[str, Any]]
    total_tokens: int
    _nested = {"input_tokens_details": _InputTokensDetails}


class InputTokenCountResponse(BaseModel):
    """``responses.input_tokens.count(...)``: ``object: "response.input_tokens"``."""

    object: str
    input_tokens: int


class ResponseError(BaseModel):
    """Why a response failed (``status: "failed"``): ``code`` is ``server_error`` or
    ``invalid_prompt``, ``message`` says what happened."""

    code: str
    message: str


class Response(BaseModel):
    """``object: "response"``. ``output_text`` joins the text of every output message, as the
    openai client's property does."""

    id: str
    object: str
    created_at: int
    status: str
    error: Optional[ResponseError]
    incomplete_details: Optional[Dict[str, Any]]
    instructions: Optional[str]
    model: str
    output: List[ResponseOutputItem]
    previous_response_id: Optional[str]
    usage: Optional[ResponseUsage]
    metadata: Optional[Dict[str, str]]
    _nested = {"output": ResponseOutputItem, "usage": ResponseUsage, "error": ResponseError}

    @property
    def output_text(self) -> str:
        return "".join(
            part.text
            for item in self.output or []
            if item.type == "message"
            for part in item.content or []
            if part.type == "output_text"
        )


class ResponseStreamEvent(BaseModel):
    """One event of a streamed response: ``type`` says which (``response.created``,
    ``response.output_text.delta``, ..., ``response.completed``), ``sequence_number`` its place;
    ``response``, ``item``, ``part``, ``delta``, ``text``, ``arguments`` as the type has them."""

    type: str
    sequence_number: int
    response: Optional[Response]
    item: Optional[ResponseOutputItem]
    part: Optional[ResponseOutputText]
    _nested = {"response": Response, "item": ResponseOutputItem, "part": ResponseOutputText}


class ResponseInputItemList(BaseModel):
    """A page of a stored response's input items: iterate it, or read ``.data``."""

    object: str
    data: List[ResponseOutputItem]
    first_id: Optional[str]
    last_id: Optional[str]
    has_more: bool
    _nested = {"data": ResponseOutputItem}

    def __iter__(self) -> Iterator[ResponseOutputItem]:
        return iter(self.data)


class ResponseDeleted(BaseModel):
    id: str
    object: str
    deleted: bool


from .images import Image, ImageGenStreamEvent, ImagesResponse  # noqa: E402  (they need BaseModel)
from .tokens import DetokenizeResponse, TokenizePiecesResponse, TokenizeResponse, TokenPiece  # noqa: E402  (they need BaseModel)
