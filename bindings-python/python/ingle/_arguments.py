"""The one gate between the caller's arguments and the native module.

Everything the client hands to ``ingle._ingle`` goes through here first: request bodies
(``body``, ``inputs``) as JSON text, model names and tags (``text``), file paths (``path``).
What the Rust side could not take, or would take wrongly, is a ``BadRequestError`` naming the
argument, raised before anything crosses:

- a string that is not valid Unicode (a lone surrogate such as ``"\\ud800"``: Python strings may
  hold one, UTF-8 cannot), wherever it is: an argument, a message's content, a dict key;
- a float that JSON cannot hold (``nan``, ``inf``): ``json.dumps`` would write ``NaN``, which no
  JSON parser reads;
- a value JSON cannot write at all (``object()``, ``bytes``), or a circular structure;
- an argument of the wrong type where a string or a path is expected;
- a path with a NUL byte, or that is empty;
- for ``audio.speech.create``: a ``voice``, ``input``, ... that is not a string, a ``speed``
  that is not a number;
- for ``audio.transcriptions.create`` and ``audio.translations.create``: a ``file`` that is
  none of the forms ``openai`` takes (nor a NumPy array of samples with its ``sample_rate``), a
  ``language``, ``prompt``, ... that is not a string, a ``temperature`` that is not a number,
  ``timestamp_granularities`` that are not a list of strings.

Values the engine checks itself (a ``max_tokens`` that is a string, an unknown role, ...) pass
through: its errors name the parameter too. ``param`` follows the engine's notation:
``messages[0].content``, ``input[1]``.
"""

from __future__ import annotations

import io
import json
import math
import numbers
import os
import pathlib
import sys
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set

from ._exceptions import _invalid_argument

__all__ = [
    "NOT_GIVEN",
    "REQUIRED",
    "body",
    "chunk_size",
    "inputs",
    "path",
    "speech",
    "stream_flag",
    "text",
    "transcription",
    "audio_file",
    "AudioFile",
]

# Deeper than this, a request is refused here, with the path, rather than by the JSON parser
# (whose own limit is 128 levels).
_MAX_DEPTH = 128
# As the engine's errors: quoted text is cut after this many characters, `param` after 256
# bytes (ingle_core::error).
_MAX_QUOTED_CHARS = 120


class _Required:
    """The default of an argument that must be given (see ``text``)."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


class _NotGiven:
    """The default of an optional argument left out (``openai``'s ``NOT_GIVEN``/``omit``): it is
    not sent, and the engine's default applies."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()


def _given(value: Any) -> bool:
    # `None` is left out too, and so are the openai package's own sentinels (code written for
    # it may pass `openai.NOT_GIVEN` or `openai.omit` along).
    if value is None or isinstance(value, _NotGiven):
        return False
    return type(value).__name__ not in ("NotGiven", "Omit")


def text(param: str, value: Any) -> str:
    """A string argument passed to the native module as is: a model name, a tag."""
    if isinstance(value, _Required):
        raise _invalid_argument(param, f"Missing required parameter: {_at(param)}")
    if not isinstance(value, str):
        raise _invalid_argument(
            param, f"Invalid type for {_at(param)}: expected a string, but got {_kind(value)}"
        )
    _check_text(param, value)
    return value


def required(param: str, value: Any) -> Any:
    """An argument that must be given, as is (the engine checks its type, naming it)."""
    if isinstance(value, _Required):
        raise _invalid_argument(param, f"Missing required parameter: {_at(param)}")
    return value


def path(param: str, value: Any) -> Optional[str]:
    """A file path argument (``config``, ``models_dir``): a str, bytes or ``os.PathLike``,
    not empty, without a NUL byte, and that the file system can encode. ``None`` stays
    ``None``. A str that came from the file system with undecodable bytes (surrogate-escaped,
    as ``os.listdir`` returns them) is a valid path; a lone surrogate that is not, is not."""
    if value is None:
        return None
    try:
        fspath = os.fspath(value)
    except TypeError:
        raise _invalid_argument(
            param,
            f"Invalid type for {_at(param)}: expected a path (str or os.PathLike), "
            f"but got {_kind(value)}",
        ) from None
    if isinstance(fspath, bytes):
        encoded, text = fspath, os.fsdecode(fspath)
    else:
        try:
            encoded, text = os.fsencode(fspath), fspath
        except UnicodeEncodeError as e:
            raise _invalid_argument(
                param,
                f"Invalid value for {_at(param)}: {fspath[e.start]!r} at index {e.start} "
                "is a lone surrogate, which no file name can hold",
            ) from None
    if not encoded:
        raise _invalid_argument(param, f"Invalid value for {_at(param)}: a path cannot be empty")
    nul = encoded.find(b"\0")
    if nul >= 0:
        raise _invalid_argument(
            param, f"Invalid value for {_at(param)}: a path cannot hold a NUL byte (at byte {nul})"
        )
    return text


def _sentinel(value: Any) -> bool:
    """``NOT_GIVEN``, or the openai package's ``NOT_GIVEN`` / ``omit``: an argument left out."""
    return isinstance(value, _NotGiven) or type(value).__name__ in ("NotGiven", "Omit")


def body(params: Dict[str, Any]) -> str:
    """The JSON request body of ``create(**params)``. The openai client's HTTP-only arguments
    are dropped and ``extra_body`` is merged in, as the openai client does. An argument whose
    value is ``NOT_GIVEN`` (ingle's, or the openai package's ``NOT_GIVEN`` and ``omit``, which
    frameworks written for that client pass for what they leave out, as openai-agents does) is
    not sent, as with the openai client; ``None`` is sent as ``null``, as it sends it."""
    params = {name: value for name, value in params.items() if not _sentinel(value)}
    extra_body = params.pop("extra_body", None)
    for name in ("extra_headers", "extra_query", "timeout"):
        params.pop(name, None)
    if extra_body is not None:
        if not isinstance(extra_body, Mapping):
            raise _invalid_argument(
                "extra_body",
                f"Invalid type for `extra_body`: expected a dict, but got {_kind(extra_body)}",
            )
        params.update(extra_body)
    return _dumps(params, "")


def named(**values: Any) -> str:
    """The request of a method that names what it reads (``responses.retrieve``'s
    ``response_id``), as JSON; values left out (None) are not sent."""
    return json.dumps({name: value for name, value in values.items() if value is not None})


def inputs(value: Any) -> str:
    """The JSON of ``predictions.create``'s ``inputs``: each input is named as a parameter."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise _invalid_argument(
            "inputs", f"Invalid type for `inputs`: expected a dict, but got {_kind(value)}"
        )
    return _dumps(value, "")


def stream_flag(value: Any) -> bool:
    """``stream``: a bool (``None`` and not given are False), not merely something truthy."""
    if not _given(value) or isinstance(value, bool):
        return bool(value)
    raise _invalid_argument(
        "stream", f"Invalid type for `stream`: expected a boolean, but got {_kind(value)}"
    )


def speech(params: Dict[str, Any]) -> str:
    """The JSON request body of ``audio.speech.create``. ``model``, ``input`` and ``voice`` are
    required strings (a custom voice object ``{"id": ...}`` is refused: ingle has none);
    ``instructions``, ``response_format`` and ``stream_format`` are strings and ``speed`` a
    finite number when given. Arguments not given (``NOT_GIVEN``, ``None``) are left out. The
    engine checks the values (an unknown voice, a speed out of range)."""
    for name in ("model", "input", "voice"):
        value = params[name]
        text(name, REQUIRED if value is not None and not _given(value) else value)
    for name in ("instructions", "response_format", "stream_format"):
        if _given(params.get(name)):
            text(name, params[name])
    if _given(params.get("speed")):
        params["speed"] = _number("speed", params["speed"])
    return body({name: value for name, value in params.items() if _given(value)})


def _number(name: str, value: Any) -> float:
    """A finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _invalid_argument(
            name, f"Invalid type for `{name}`: expected a number, but got {_kind(value)}"
        )
    try:
        as_float = float(value)
    except OverflowError:  # an int beyond any float
        raise _invalid_argument(
            name, f"Invalid value for `{name}`: the number is too large"
        ) from None
    return _check_float(name, as_float)


def transcription(params: Dict[str, Any]) -> str:
    """The JSON request body of ``audio.transcriptions.create`` and ``audio.translations.create``
    (all but ``file``). ``model`` is a required string; ``language``, ``prompt`` and
    ``response_format`` are strings, ``temperature`` a finite number and
    ``timestamp_granularities`` a list of strings when given. Arguments not given
    (``NOT_GIVEN``, ``None``) are left out; the others (``include``, ``chunking_strategy``, ...)
    pass through for the engine to refuse by name. The engine checks the values."""
    model = params["model"]
    text("model", REQUIRED if model is not None and not _given(model) else model)
    for name in ("language", "prompt", "response_format"):
        if _given(params.get(name)):
            text(name, params[name])
    if _given(params.get("temperature")):
        params["temperature"] = _number("temperature", params["temperature"])
    granularities = params.get("timestamp_granularities")
    if _given(granularities):
        if isinstance(granularities, (str, bytes)) or not isinstance(granularities, Iterable):
            raise _invalid_argument(
                "timestamp_granularities",
                "Invalid type for `timestamp_granularities`: expected a list of strings "
                f"('segment', 'word'), but got {_kind(granularities)}",
            )
        params["timestamp_granularities"] = [
            text(f"timestamp_granularities[{i}]", g) for i, g in enumerate(granularities)
        ]
    return body({name: value for name, value in params.items() if _given(value)})


class AudioFile(NamedTuple):
    """The ``file`` of a transcription as the native module takes it: the bytes of an audio
    file and its name (a hint of the format), or float32 samples (native byte order,
    interleaved) with their ``sample_rate`` and ``channels``."""

    data: bytes
    filename: Optional[str]
    sample_rate: Optional[int]
    channels: int


_FILE_FORMS = (
    "bytes, a file opened in binary mode, io.BytesIO, a pathlib.Path (os.PathLike), a "
    "(filename, content[, content_type]) tuple, or a float32 NumPy array with `sample_rate`"
)


def audio_file(file: Any, sample_rate: Any) -> AudioFile:
    """``file`` in any form ``openai`` takes: ``bytes``, a binary file object (an open file,
    ``io.BytesIO``: read from where it is), an ``os.PathLike`` (read here; a missing file
    raises ``FileNotFoundError``, as with ``openai``), or a ``(filename, content[,
    content_type[, headers]])`` tuple whose content is one of those. Also a NumPy array of
    samples (1-D mono, or 2-D ``(frames, channels)``, float32 or another float type) with
    ``sample_rate`` in Hz."""
    if not _given(file) or isinstance(file, _Required):
        raise _invalid_argument("file", "Missing required parameter: `file`")
    if _is_array(file):
        return _samples(file, sample_rate)
    if _given(sample_rate):
        raise _invalid_argument(
            "sample_rate",
            "Invalid argument `sample_rate`: it gives the rate of a NumPy array of samples; "
            f"`file` is {_kind(file)}, whose format carries its own rate",
        )
    if isinstance(file, tuple):
        if not 2 <= len(file) <= 4:
            raise _invalid_argument(
                "file",
                "Invalid value for `file`: a tuple must be (filename, content[, content_type"
                f"[, headers]]), but it has {len(file)} items",
            )
        name = file[0]
        if name is not None and not isinstance(name, (str, bytes, os.PathLike)):
            raise _invalid_argument(
                "file",
                "Invalid type for the filename of `file`: expected a string, but got "
                f"{_kind(name)}",
            )
        data, own_name = _content(file[1])
        return AudioFile(data, _basename(name) if name is not None else own_name, None, 1)
    data, name = _content(file)
    return AudioFile(data, name, None, 1)


def _content(file: Any) -> "tuple[bytes, Optional[str]]":
    """``(bytes, file name)`` of file content: bytes, a binary file object, or a path."""
    if isinstance(file, (bytes, bytearray, memoryview)):
        return bytes(file), None
    if isinstance(file, os.PathLike):
        path = pathlib.Path(os.fsdecode(os.fspath(file)))
        return path.read_bytes(), path.name
    if isinstance(file, io.IOBase) or (
        callable(getattr(file, "read", None)) and not isinstance(file, (str, type))
    ):
        data = file.read()
        if isinstance(data, str):
            raise _invalid_argument(
                "file",
                "Invalid value for `file`: the file is open in text mode; open it in binary "
                "mode (open(path, 'rb'))",
            )
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise _invalid_argument(
                "file",
                f"Invalid value for `file`: its read() gave {_kind(data)}, not bytes",
            )
        name = getattr(file, "name", None)
        return bytes(data), _basename(name) if isinstance(name, (str, bytes)) else None
    if isinstance(file, str):
        raise _invalid_argument(
            "file",
            "Invalid type for `file`: a str is not a file (as with openai, pass the file, not "
            f"its name: pathlib.Path(...) or open(..., 'rb')); expected {_FILE_FORMS}",
        )
    raise _invalid_argument(
        "file", f"Invalid type for `file`: expected {_FILE_FORMS}, but got {_kind(file)}"
    )


def _basename(name: Any) -> Optional[str]:
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    name = os.path.basename(name)
    # A name the engine could not take (a lone surrogate) is only a hint: left out.
    return name if name and _is_unicode(name) else None


def _is_array(value: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def _samples(array: Any, sample_rate: Any) -> AudioFile:
    import numpy

    if not _given(sample_rate):
        raise _invalid_argument(
            "sample_rate",
            "Missing required parameter: `sample_rate` (in Hz): `file` is a NumPy array of "
            "samples, whose rate only the caller knows",
        )
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Integral):
        raise _invalid_argument(
            "sample_rate",
            "Invalid type for `sample_rate`: expected an integer (Hz), but got "
            f"{_kind(sample_rate)}",
        )
    if not 1 <= int(sample_rate) <= 0xFFFF_FFFF:
        raise _invalid_argument(
            "sample_rate",
            f"Invalid value for `sample_rate`: {int(sample_rate)}; it must be a positive "
            "number of Hz",
        )
    if not numpy.issubdtype(array.dtype, numpy.floating):
        raise _invalid_argument(
            "file",
            f"Invalid value for `file`: a NumPy array of {array.dtype} samples; expected "
            "float32 samples in [-1, 1] (for int16, use array.astype(numpy.float32) / 32768)",
        )
    if array.ndim == 1:
        channels = 1
    elif array.ndim == 2 and 1 <= array.shape[1] <= 0xFFFF:
        channels = array.shape[1]
    else:
        raise _invalid_argument(
            "file",
            f"Invalid value for `file`: a NumPy array of shape {array.shape}; expected 1-D "
            "(mono) or 2-D (frames, channels) samples",
        )
    data = numpy.ascontiguousarray(array, dtype=numpy.float32).tobytes()
    return AudioFile(data, None, int(sample_rate), channels)


def chunk_size(value: Any) -> Optional[int]:
    """``iter_bytes(chunk_size)``: ``None`` (chunks as they come) or a positive int."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _invalid_argument(
            "chunk_size",
            f"Invalid type for `chunk_size`: expected an integer, but got {_kind(value)}",
        )
    if value < 1:
        raise _invalid_argument(
            "chunk_size", f"Invalid value for `chunk_size`: {int(value)}; it must be at least 1"
        )
    return int(value)


def _dumps(value: Mapping[str, Any], param: str) -> str:
    # Checked and made plain first, so json.dumps cannot fail and writes only JSON.
    plain = _plain(value, param, set(), 0)
    return json.dumps(plain, allow_nan=False, check_circular=False)


def _plain(value: Any, param: str, active: Set[int], depth: int) -> Any:
    """``value`` as what json writes (dicts, lists, str, int, float, bool, None), checked.
    Also taken: response objects and pydantic models (``model_dump()``: an earlier reply passed
    back in ``messages``), other mappings and iterables (tuples, generators, NumPy arrays),
    numbers such as NumPy scalars."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        _check_text(param, value)
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _check_float(param, value)
    if depth >= _MAX_DEPTH:
        raise _invalid_argument(
            param or None,
            f"Invalid value for {_at(param)}: nested more than {_MAX_DEPTH} levels deep",
        )
    if isinstance(value, Mapping):
        with _Visiting(value, param, active):
            return {
                key: _plain(item, name, active, depth + 1)
                for key, name, item in _items(value, param)
            }
    if isinstance(value, (list, tuple)):
        with _Visiting(value, param, active):
            return _plain_list(value, param, active, depth)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise _invalid_argument(
            param or None,
            f"Invalid type for {_at(param)}: {_kind(value)} is not text; decode it to a str first",
        )
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump(exclude_none=True), param, active, depth + 1)
    if callable(getattr(value, "tolist", None)):  # NumPy arrays and scalars
        return _plain(value.tolist(), param, active, depth + 1)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real):
        return _check_float(param, float(value))
    if hasattr(value, "__iter__"):
        return _plain_list(list(value), param, active, depth)
    raise _invalid_argument(
        param or None,
        f"Invalid type for {_at(param)}: {_kind(value)} cannot be written as JSON",
    )


def _plain_list(value: Sequence[Any], param: str, active: Set[int], depth: int) -> List[Any]:
    return [_plain(item, f"{param}[{i}]", active, depth + 1) for i, item in enumerate(value)]


def _items(value: Mapping[Any, Any], param: str) -> Iterable[Any]:
    """``(key, param of the value, value)``; keys as json writes them (``logit_bias`` takes
    token ids as ints)."""
    for key, item in value.items():
        if isinstance(key, str):
            if not key.isascii() and not _is_unicode(key):
                raise _invalid_argument(
                    param or None,
                    f"Invalid key {_shown(repr(key))} in {_at(param)}: it holds a lone surrogate, "
                    "which is not valid Unicode text",
                )
            name = f"{param}.{key}" if param else key
        elif key is None or isinstance(key, (bool, int, float)):
            if isinstance(key, float):
                _check_float(param or None, key)
            key = json.dumps(key)
            name = f"{param}.{key}" if param else key
        else:
            raise _invalid_argument(
                param or None,
                f"Invalid type for a key of {_at(param)}: expected a string, but got {_kind(key)}",
            )
        yield key, name, item


class _Visiting:
    """Marks a container as being written, to refuse one that contains itself."""

    def __init__(self, value: Any, param: str, active: Set[int]) -> None:
        self.id, self.param, self.active = id(value), param, active

    def __enter__(self) -> None:
        if self.id in self.active:
            raise _invalid_argument(
                self.param or None,
                f"Invalid value for {_at(self.param)}: it contains itself (a circular reference)",
            )
        self.active.add(self.id)

    def __exit__(self, *exc: Any) -> None:
        self.active.discard(self.id)


def _check_text(param: str, value: str) -> None:
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _invalid_argument(
            param or None,
            f"Invalid value for {_at(param)}: {value[e.start]!r} at index {e.start} is a lone "
            "surrogate, which is not valid Unicode text",
        ) from None


def _is_unicode(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_float(param: Optional[str], value: float) -> float:
    if not math.isfinite(value):
        raise _invalid_argument(
            param or None,
            f"Invalid value for {_at(param)}: {value!r} is not a number JSON can hold",
        )
    return float(value)


def _at(param: Optional[str]) -> str:
    """Where the problem is, for a message: the parameter, quoted (cut if very long)."""
    return f"`{_shown(param)}`" if param else "the request"


def _shown(text: str) -> str:
    """At most 120 characters of caller-supplied text, as the engine quotes it."""
    if len(text) <= _MAX_QUOTED_CHARS:
        return text
    rest = len(text[_MAX_QUOTED_CHARS:].encode("utf-8", "surrogatepass"))
    return f"{text[:_MAX_QUOTED_CHARS]}…({rest} more bytes)"


def _kind(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def config_json(value: Mapping[str, Any]) -> str:
    """A config given as a dict (``OpenAI(config={"predictors": [...]})``), as the JSON the
    engine reads: checked as a request body is (no NaN, no lone surrogate, no cycle)."""
    return _dumps(value, "config")
