"""What a value crosses the native module as: tensors and audio as NumPy arrays and raw
buffers, checked on the way."""

from __future__ import annotations

import sys
import typing
from typing import Any, Optional, Tuple

from . import _ingle


_TENSOR_DTYPES = ("float32", "float16", "int64", "int32", "int8", "uint8", "bool")


def _numpy() -> Any:
    import numpy

    return numpy


def _is_ndarray_type(hint: Any) -> bool:
    if "numpy" not in sys.modules:
        return False
    np = sys.modules["numpy"]
    return hint is np.ndarray or typing.get_origin(hint) is np.ndarray


def _declared_dtype(hint: Any) -> Optional[str]:
    """``float32`` of ``npt.NDArray[np.float32]``; ``None`` when the hint names none."""
    np = _numpy()
    for arg in typing.get_args(hint):
        for inner in (typing.get_args(arg) or (arg,)):
            try:
                if isinstance(inner, type) and issubclass(inner, np.generic):
                    return str(np.dtype(inner))
            except TypeError:
                continue
    return None


def _raw_tensor(array: Any, what: str, dtype: Optional[str]) -> _ingle.RawTensor:
    np = _numpy()
    if not isinstance(array, np.ndarray):
        raise _OutputError(f"{what} is a {type(array).__name__}, declared a NumPy array")
    name = str(array.dtype)
    if dtype is not None and name != dtype:
        raise _OutputError(f"{what} is a {name} array, declared {dtype}")
    if name not in _TENSOR_DTYPES:
        raise _OutputError(
            f"{what} is a {name} array; arrays cross as {', '.join(_TENSOR_DTYPES)}")
    if array.nbytes > _ingle.MAX_TENSOR_BYTES:
        # Before any copy: NumPy allocates zeros lazily, a copy of 50,000 x 50,000 would not be.
        raise _OutputError(
            f"{what} is a {name} array of shape {list(array.shape)}, {array.nbytes} bytes; "
            f"at most {_ingle.MAX_TENSOR_BYTES >> 30} GiB crosses into ingle")
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
    return _ingle.RawTensor(name, list(array.shape), data.tobytes())


def _raw_audio(samples: Any, sample_rate: int, what: str) -> _ingle.RawAudio:
    np = _numpy()
    if not isinstance(samples, np.ndarray):
        raise _OutputError(f"{what} is a {type(samples).__name__}, declared a float32 NumPy array")
    if samples.dtype != np.float32:
        raise _OutputError(f"{what} is a {samples.dtype} array; audio is float32")
    channels, channels_first = _audio_layout(samples.shape, what)
    if channels_first:
        samples = samples.T  # (C, F) → (F, C): the engine takes interleaved frames
    data = np.ascontiguousarray(samples, dtype=np.float32).tobytes()
    return _ingle.RawAudio(data, sample_rate, channels)


_MAX_CHANNELS = 64


def _audio_layout(shape: Tuple[int, ...], what: str) -> Tuple[int, bool]:
    """``(channels, channels_first)`` of an audio array's shape. ``(F,)`` is mono; a 2-D array
    is ``(F, C)`` (interleaved) or ``(C, F)`` (channels first), as the two documents
    predictors are written from say, and its shape decides which: the channels are the side
    of at most 64 that is shorter than the other. A shape that decides nothing (``(2, 2)``,
    ``(100, 200)``) is refused, naming ``what``."""
    if len(shape) == 1:
        return 1, False
    if len(shape) == 2:
        rows, columns = shape
        if 1 <= columns <= _MAX_CHANNELS and (rows > columns or rows == 0 or rows == columns == 1):
            return columns, False  # (F, C)
        if 1 <= rows <= _MAX_CHANNELS and (columns > rows or columns == 0):
            return rows, True  # (C, F)
        if rows == columns:
            raise _OutputError(
                f"{what} has shape {tuple(shape)}, which is ambiguous: (frames, channels) or "
                "(channels, frames)? The channels are the shorter side; give audio with more "
                "frames than channels")
        raise _OutputError(
            f"{what} has shape {tuple(shape)}: read either way it has more than "
            f"{_MAX_CHANNELS} channels (or none); audio is (frames,), (frames, channels) or "
            f"(channels, frames) with 1 to {_MAX_CHANNELS} channels")
    raise _OutputError(
        f"{what} has shape {tuple(shape)}; audio is (frames,), (frames, channels) or "
        "(channels, frames)")


def _array_of(raw: Any) -> Any:
    """A ``RawTensor``/``RawAudio`` from the engine as a NumPy array."""
    np = _numpy()
    if isinstance(raw, _ingle.RawAudio):
        samples = np.frombuffer(raw.data, dtype=np.float32)
        return samples if raw.channels == 1 else samples.reshape(-1, raw.channels)
    return np.frombuffer(raw.data, dtype=np.dtype(raw.dtype).newbyteorder("<")).reshape(raw.shape)


class _OutputError(Exception):
    """An output that breaks its declaration (worded by the caller with the predictor's tag)."""
