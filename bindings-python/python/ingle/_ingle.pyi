# The native module (Rust, bindings-python/src/lib.rs, server.rs, streams.rs, predictors.rs,
# interrupt.rs). Requests and responses are JSON text (speech audio and samples, transcription
# audio, embedding matrices, tensors: bytes). Checked against the compiled module by
# `python -m mypy.stubtest ingle._ingle` (scripts/test-python). Every class is a frozen pyo3
# class without `subclass`: final at runtime.
import os
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Literal,
    Optional,
    Sequence,
    Tuple,
    Union,
    final,
    overload,
)

__all__ = [
    "NativeClient",
    "NativeStream",
    "NativeSpeechStream",
    "CancelFlag",
    "RawTensor",
    "MAX_TENSOR_BYTES",
    "RawAudio",
    "LogSink",
    "NativeServer",
    "check_predictor_declaration",
    "system_info",
    "run_command",
    "current_call",
    "call_cancelled",
    "__version__",
]

__version__: str
# The most bytes one array may hold to cross into ingle (1 GiB).
MAX_TENSOR_BYTES: int

# A path as pyo3 takes a `PathBuf`: a str or an `os.PathLike` of one.
_Path = Union[str, os.PathLike[str]]

# Made only by the native module (no constructor): `NativeClient.stream` and the like.
@final
class NativeStream:
    @property
    def closed(self) -> bool: ...
    def __iter__(self) -> NativeStream: ...
    def __next__(self) -> str: ...
    def close(self) -> None: ...

@final
class NativeSpeechStream:
    @property
    def closed(self) -> bool: ...
    @property
    def content_type(self) -> str: ...
    def __iter__(self) -> NativeSpeechStream: ...
    def __next__(self) -> bytes: ...
    def close(self) -> None: ...

@final
class CancelFlag:
    def __new__(cls) -> CancelFlag: ...
    def set(self) -> None: ...

# A tensor between the core and Python: NumPy's dtype name, the shape, and the row-major
# little-endian bytes. A dtype ingle does not carry raises TypeError.
@final
class RawTensor:
    def __new__(cls, dtype: str, shape: Sequence[int], data: bytes) -> RawTensor: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> List[int]: ...
    @property
    def data(self) -> bytes: ...

# Audio between the core and Python: float32 samples (native byte order, interleaved).
@final
class RawAudio:
    def __new__(cls, data: bytes, sample_rate: int, channels: int) -> RawAudio: ...
    @property
    def data(self) -> bytes: ...
    @property
    def sample_rate(self) -> int: ...
    @property
    def channels(self) -> int: ...

# Where a Python predictor's prints and tracebacks go: made by the native module, handed to
# `register_predictor`'s `invoke`.
@final
class LogSink:
    def write(self, text: str) -> int: ...

# A running `NativeClient.serve` server.
@final
class NativeServer:
    # `(host, port)` it listens on (the port chosen when 0 was asked for).
    @property
    def address(self) -> Tuple[str, int]: ...
    def stop(self) -> None: ...
    # Up to `timeout` seconds; whether the server has ended.
    def wait(self, timeout: float) -> bool: ...

@final
class NativeClient:
    # `config`: a TOML config file; `config_text`: the config itself (TOML or JSON), which wins
    # over `config`; neither: `$INGLE_CONFIG`, else the default model.
    def __new__(
        cls,
        config: Optional[_Path] = None,
        models_dir: Optional[_Path] = None,
        config_text: Optional[str] = None,
    ) -> NativeClient: ...
    # Any method of the core's method table by name (`chat.completions.create`,
    # `responses.retrieve`, `audio.transcriptions.create`, ...): its request as JSON text; a
    # whole answer as text (JSON, or a transcription in its format), speech as (content,
    # content_type, samples, sample_rate, channels) (`samples` the float32 bytes; (content,
    # content_type) for SSE), embeddings as (model, rows, dims, prompt_tokens, base64, matrix)
    # (`matrix` the row-major float32 bytes); or the chunks of a streamed one (speech's
    # bytes). `audio` (a method that takes an upload): a file's bytes (`filename` a hint of its
    # format), or with `sample_rate` float32 samples in native byte order, `channels`
    # interleaved.
    @overload
    def call(  # type: ignore[overload-overlap]
        self,
        method: Literal["embeddings.create"],
        request: str,
        audio: None = None,
        filename: None = None,
        sample_rate: None = None,
        channels: int = 1,
        cancel: Optional[CancelFlag] = None,
    ) -> Tuple[str, int, int, int, bool, bytes]: ...
    @overload
    def call(  # type: ignore[overload-overlap]
        self,
        method: Literal["audio.speech.create"],
        request: str,
        audio: None = None,
        filename: None = None,
        sample_rate: None = None,
        channels: int = 1,
        cancel: Optional[CancelFlag] = None,
    ) -> Union[Tuple[bytes, str, bytes, int, int], Tuple[bytes, str]]: ...
    @overload
    def call(
        self,
        method: str,
        request: str,
        audio: Optional[bytes] = None,
        filename: Optional[str] = None,
        sample_rate: Optional[int] = None,
        channels: int = 1,
        cancel: Optional[CancelFlag] = None,
    ) -> str: ...
    @overload
    def stream(  # type: ignore[overload-overlap]
        self,
        method: Literal["audio.speech.stream"],
        request: str,
        audio: None = None,
        filename: None = None,
        sample_rate: None = None,
        channels: int = 1,
        cancel: Optional[CancelFlag] = None,
    ) -> NativeSpeechStream: ...
    @overload
    def stream(
        self,
        method: str,
        request: str,
        audio: Optional[bytes] = None,
        filename: Optional[str] = None,
        sample_rate: Optional[int] = None,
        channels: int = 1,
        cancel: Optional[CancelFlag] = None,
    ) -> NativeStream: ...
    # The report as JSON. `progress(event_json)` hears each event; a `False` return (or an
    # exception, raised here) stops the pull.
    def models_pull(self, model: str, progress: Optional[Callable[[str], object]] = None) -> str: ...
    def models_catalog(self) -> str: ...
    # Whether it was loaded.
    def models_unload(self, model: str) -> bool: ...
    def models_is_loaded(self, model: str) -> bool: ...
    # `raw_inputs`: the inputs JSON cannot carry, merged over those of `inputs`.
    def predictions_create(
        self,
        tag: str,
        inputs: str,
        raw_inputs: Optional[Dict[str, Union[RawTensor, RawAudio]]] = None,
        cancel: Optional[CancelFlag] = None,
    ) -> str: ...
    def predictions_stream(
        self,
        tag: str,
        inputs: str,
        raw_inputs: Optional[Dict[str, Union[RawTensor, RawAudio]]] = None,
    ) -> NativeStream: ...
    # `declaration`: the predictor's JSON declaration; `invoke(inputs, logs)` starts a
    # prediction: an iterator of output lists (JSON values, `RawTensor`, `RawAudio`).
    def register_predictor(
        self, declaration: str, invoke: Callable[[Dict[str, Any], LogSink], Iterator[List[Any]]]
    ) -> None: ...
    # `allowed_hosts` and `cors_origins` default to none (a Rust `Vec::new()`).
    def serve(
        self,
        host: str,
        port: int,
        api_key: Optional[str] = None,
        allowed_hosts: Sequence[str] = ...,
        cors_origins: Sequence[str] = ...,
    ) -> NativeServer: ...
    def metrics(self, model: str) -> str: ...

# Raises the engine's BadRequestError (naming the parameter) for a broken declaration.
def check_predictor_declaration(declaration: str) -> None: ...
def current_call() -> int: ...
def call_cancelled(call: int) -> bool: ...
def system_info() -> str: ...
# The `ingle` command line (`argv[0]` the program's name); its exit status.
def run_command(argv: Sequence[str]) -> int: ...
