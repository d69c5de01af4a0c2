"""Predictors written in Python: ``@predictor`` reads a function's type hints and annotations
into a declaration the engine checks, and runs the function when the engine asks.

    @predictor(tag="@me/echo")
    def echo(messages: list[ChatCompletionMessageParam]) -> Iterator[str]:
        for word in messages[-1]["content"].split():
            yield word + " "

    client = OpenAI(predictors=[echo])
    client.chat.completions.create(model="@me/echo", messages=[...])

The OpenAI methods find parameters by annotation, never by name. What a function prints goes
to its prediction's ``logs``; an exception fails the prediction (``InternalServerError``
through the OpenAI methods) with its traceback in ``logs``.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import contextvars
import copy
import enum
import inspect
import json
import sys
import threading
import traceback
import typing
from typing import (
    Any, Callable, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple, TypeVar, Union,
)

from . import _ingle
from ._annotations import (
    AudioSamples,
    Parameter,
    PredictorDefinitionError,
    _Annotation,
    _EmbeddingDims,
    _Unsupported,
)
from ._values import (
    _array_of,
    _declared_dtype,
    _is_ndarray_type,
    _OutputError,
    _raw_audio,
    _raw_tensor,
)
from .types import (
    BaseModel,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
)

__all__ = ["Parameter", "Predictor", "PredictorDefinitionError", "AudioSamples", "predictor"]


# --- Reading a function's signature --------------------------------------------------------

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


class _Param:
    """One parameter: its declaration and how its values convert."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.json: Dict[str, Any] = {"name": name}
        self.to_python: Callable[[Any], Any] = lambda v: v
        self.from_python: Callable[[Any, str], Any] = lambda v, what: v


def _split_annotated(hint: Any) -> Tuple[Any, Optional[_Annotation]]:
    if typing.get_origin(hint) is typing.Annotated:
        base, *extras = typing.get_args(hint)
        found = [e for e in extras if isinstance(e, _Annotation)]
        if len(found) > 1:
            raise TypeError(f"has {len(found)} ingle annotations; give one")
        # A copy: filling in voices from the type must not change an annotation shared by others.
        return base, copy.copy(found[0]) if found else None
    if isinstance(hint, _Annotation):
        raise TypeError("is annotated with a Parameter but no type: use Annotated[type, Parameter.X(...)]")
    return hint, None


def _strip_optional(hint: Any) -> Tuple[Any, bool]:
    if typing.get_origin(hint) is Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0], True
    return hint, False


def _choices_type(values: Sequence[Any]) -> str:
    kinds = {_SCALARS.get(type(v)) for v in values}
    if len(kinds) != 1 or None in kinds:
        raise TypeError("mixes choice types; give choices of one type (str, int, float or bool)")
    return kinds.pop()  # type: ignore[return-value]


def _describe_type(param: _Param, hint: Any, annotation: Optional[_Annotation], output: bool) -> None:
    """Fills ``param``'s type, choices and converters from the type hint."""
    origin = typing.get_origin(hint)
    kind = annotation.kind if annotation else "generic"
    if isinstance(annotation, _Unsupported):
        raise TypeError(f"is annotated {annotation.name}, which ingle does not support: "
                        f"{annotation.why}")
    if kind == "audio":
        if not _is_ndarray_type(hint):
            raise TypeError("is annotated Audio; its type must be numpy.ndarray")
        param.json["type"] = "audio"
        rate = annotation.sample_rate  # type: ignore[union-attr]
        param.to_python = _array_of
        param.from_python = lambda v, what: _raw_audio(v, rate, what)
        return
    if kind in ("chat_images", "chat_audios"):
        _describe_media_list(param, hint, kind)
        return
    if _is_ndarray_type(hint):
        dtype = _declared_dtype(hint)
        if kind == "embedding" and output:
            dtype = dtype or "float32"
        param.json["type"] = "tensor"
        param.to_python = _array_of
        if output:  # a list of arrays of one shape is their stack (images.generate's n images)
            param.from_python = lambda v, what: _raw_tensor(_stacked(v, what), what, dtype)
        else:
            param.from_python = lambda v, what: _raw_tensor(v, what, dtype)
        return
    if hint in _SCALARS:
        param.json["type"] = _SCALARS[hint]
        if hint is float:
            param.from_python = _float_out
        return
    if origin is typing.Literal:
        values = list(typing.get_args(hint))
        param.json["type"] = _choices_type(values)
        param.json["choices"] = values
        if kind == "audio_voice" and annotation.voices is None:  # type: ignore[union-attr]
            annotation.voices = [str(v) for v in values]  # type: ignore[union-attr]
        return
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        members = list(hint)
        values = [m.value for m in members]
        param.json["type"] = _choices_type(values)
        param.json["choices"] = values
        if kind == "audio_voice" and annotation.voices is None:  # type: ignore[union-attr]
            annotation.voices = [str(v) for v in values]  # type: ignore[union-attr]
        param.to_python = hint
        param.from_python = lambda v, what: v.value if isinstance(v, enum.Enum) else v
        return
    if hint in (list, List) or origin in (list, collections.abc.Sequence, Sequence):
        param.json["type"] = "array"
        items = typing.get_args(hint)
        item = items[0] if items else None
        if item is ChatCompletionMessageParam or item is ChatCompletionMessage:
            if kind == "generic":
                param.json["annotation"] = "chat_messages"
            if item is ChatCompletionMessage:
                param.to_python = lambda v: [ChatCompletionMessage.construct(m) for m in v]
        elif item in _SCALARS:
            param.json["items"] = _SCALARS[item]
        elif item in (dict, Dict) or typing.get_origin(item) is dict:
            param.json["items"] = "object"
        elif item is not None and item is not Any:
            raise TypeError(f"is a list of {_name(item)}; lists hold str, int, float, bool or dict")
        return
    typeddict = getattr(typing, "is_typeddict", lambda _: False)(hint)
    if hint in (dict, Dict) or origin is dict or typeddict:
        param.json["type"] = "object"
        param.from_python = lambda v, what: v.model_dump() if isinstance(v, BaseModel) else v
        return
    raise TypeError(
        f"has the type {_name(hint)}; predictor parameters are str, int, float, bool, list, "
        "dict, Literal, Enum, numpy.ndarray or ingle's chat types")


def _pillow_image_type() -> Any:
    """``PIL.Image.Image`` when Pillow is installed, else ``None``."""
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image.Image


def _describe_media_list(param: _Param, hint: Any, kind: str) -> None:
    """A ``ChatImages`` or ``ChatAudios`` input: a list, whose items the hint may name."""
    origin = typing.get_origin(hint)
    if not (hint in (list, List) or origin in (list, collections.abc.Sequence, Sequence)):
        what = "images" if kind == "chat_images" else "audio arrays"
        raise TypeError(f"is annotated {'ChatImages' if kind == 'chat_images' else 'ChatAudios'}"
                        f"; its type must be a list (of {what}), not {_name(hint)}")
    param.json["type"] = "array"
    items = typing.get_args(hint)
    item = items[0] if items else None
    if kind == "chat_audios":
        if item is not None and item is not Any and not _is_ndarray_type(item):
            raise TypeError(f"is annotated ChatAudios; its items are numpy.ndarray, not {_name(item)}")
        param.to_python = lambda v: [_array_of(a) for a in v]
        return
    pillow = _pillow_image_type()
    if item is not None and item is not Any and pillow is not None and item is pillow:
        as_pillow = True
    elif item is None or item is Any:
        as_pillow = pillow is not None  # PIL images where Pillow is installed, else arrays
    elif _is_ndarray_type(item):
        as_pillow = False
    else:
        raise TypeError(f"is annotated ChatImages; its items are PIL.Image.Image or "
                        f"numpy.ndarray, not {_name(item)}")
    if as_pillow:
        def images(v: Any) -> Any:
            from PIL import Image
            return [Image.fromarray(_array_of(t)) for t in v]
        param.to_python = images
    else:
        param.to_python = lambda v: [_array_of(t) for t in v]


def _stacked(value: Any, what: str) -> Any:
    """``value``; a list (or tuple) of NumPy arrays of one shape and dtype as one array."""
    if not isinstance(value, (list, tuple)) or not value:
        return value
    import numpy as np

    if not all(isinstance(a, np.ndarray) for a in value):
        return value
    if len({(a.shape, a.dtype) for a in value}) != 1:
        shapes = ", ".join(f"{a.shape} {a.dtype}" for a in value[:4])
        raise _OutputError(f"{what} is a list of arrays of different shapes or dtypes ({shapes}); "
                           "a list of arrays must be of one shape and dtype")
    total = sum(a.nbytes for a in value)
    if total > _ingle.MAX_TENSOR_BYTES:
        # Before stacking, which copies: NumPy's zeros are lazy, their stack would not be.
        raise _OutputError(
            f"{what} is a list of {len(value)} {value[0].dtype} arrays of shape {list(value[0].shape)}, "
            f"{total} bytes; at most {_ingle.MAX_TENSOR_BYTES >> 30} GiB crosses into ingle")
    return np.stack(value)


def _float_out(value: Any, what: str) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or repr(hint)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise TypeError(f"has the default {value!r}, which is not a JSON value") from None
    return json.loads(text)


def _dims_up_to_default(param: _Param, annotation: _EmbeddingDims) -> None:
    """An ``EmbeddingDims`` without ``max``: the default is the most dimensions there are."""
    default = param.json.get("default")
    if isinstance(default, bool) or not isinstance(default, int):
        raise TypeError("is annotated EmbeddingDims without `max` or an int default; give "
                        "`max`, the most dimensions the model gives")
    annotation.max = default
    param.json["max"] = default
    param.json["annotation"] = annotation._json()


def _unwrap_yield(hint: Any) -> Any:
    """``X`` of ``Iterator[X]``, ``Generator[X, ...]``, ``AsyncIterator[X]`` ..."""
    origin = typing.get_origin(hint)
    iterables = (collections.abc.Iterator, collections.abc.Iterable, collections.abc.Generator,
                 collections.abc.AsyncIterator, collections.abc.AsyncIterable,
                 collections.abc.AsyncGenerator)
    if origin in iterables:
        args = typing.get_args(hint)
        return args[0] if args else Any
    return None


class Predictor:
    """A function as a predictor. Calling it calls the function; ``OpenAI(predictors=[...])``
    or ``client.predictors.register(...)`` serves it."""

    def __init__(self, function: Callable[..., Any], tag: str, description: Optional[str]) -> None:
        self.function = function
        self.tag = tag
        self.name = getattr(function, "__qualname__", repr(function))
        self.is_async = inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)
        self.is_generator = inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function)
        self.description = description if description is not None else inspect.getdoc(function) or ""
        self.inputs: List[_Param] = []
        self.outputs: List[_Param] = []
        self.chat = False
        self.chat_outputs = False  # outputs are [text, finish_reason, usage, reasoning]
        self._read_signature()
        self.declaration = json.dumps({
            "tag": tag,
            "kind": "generator" if self.is_generator else "eager",
            "description": self.description,
            "inputs": [p.json for p in self.inputs],
            "outputs": [p.json for p in self.outputs],
        })
        try:
            _ingle.check_predictor_declaration(self.declaration)
        except Exception as error:  # the engine's BadRequestError
            raise self._definition_error(error) from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<ingle predictor {self.tag} ({self.name})>"

    def _definition_error(self, error: Exception) -> PredictorDefinitionError:
        param = getattr(error, "param", None)
        message = getattr(error, "message", None) or str(error)
        return PredictorDefinitionError(f"{self.name}: {message}", function=self.name, param=param)

    def _fail(self, param: Optional[str], problem: str) -> PredictorDefinitionError:
        where = f"the parameter `{param}`" if param else "the return type"
        return PredictorDefinitionError(
            f"{self.name}: {where} {problem}", function=self.name, param=param)

    def _read_signature(self) -> None:
        try:
            hints = typing.get_type_hints(self.function, include_extras=True)
        except Exception as error:
            raise PredictorDefinitionError(
                f"{self.name}: its type hints cannot be read: {error}", function=self.name) from None
        signature = inspect.signature(self.function)
        for name, p in signature.parameters.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise self._fail(name, "is *args or **kwargs; a predictor names each parameter")
            if p.kind is p.POSITIONAL_ONLY:
                raise self._fail(name, "is positional-only; predictors take keyword arguments")
            if name not in hints:
                raise self._fail(name, "has no type hint")
            param = _Param(name)
            try:
                base, annotation = _split_annotated(hints[name])
                base, optional = _strip_optional(base)
                if optional and p.default is inspect.Parameter.empty:
                    raise TypeError("is Optional but has no default")
                _describe_type(param, base, annotation, output=False)
                self._annotate(param, annotation)
                if p.default is not inspect.Parameter.empty:
                    param.json["default"] = _json_default(p.default)
                if isinstance(annotation, _EmbeddingDims) and annotation.max is None:
                    _dims_up_to_default(param, annotation)
            except TypeError as error:
                raise self._fail(name, str(error)) from None
            if param.json.get("annotation") == "chat_messages":
                self.chat = True
            self.inputs.append(param)
        self._read_outputs(hints.get("return", inspect.Signature.empty))

    def _annotate(self, param: _Param, annotation: Optional[_Annotation]) -> None:
        if annotation is None:
            return
        if annotation.description:
            param.json["description"] = annotation.description
        for bound in ("min", "max"):
            value = getattr(annotation, bound)
            if value is not None:
                param.json[bound] = value
        if annotation.kind != "generic":
            param.json["annotation"] = annotation._json()
            if annotation.kind == "chat_messages":
                self.chat = True

    def _read_outputs(self, hint: Any) -> None:
        if hint is inspect.Signature.empty:
            raise self._fail(None, "is missing: annotate what the function returns or yields")
        if self.is_generator:
            item = _unwrap_yield(hint)
            if item is None:
                raise self._fail(None, f"{_name(hint)} is not Iterator[...] or AsyncIterator[...] "
                                 "(the function yields)")
            hint = item
        elif inspect.iscoroutinefunction(self.function) and typing.get_origin(hint) is collections.abc.Coroutine:
            hint = typing.get_args(hint)[-1]
        takes_audio = any(p.json.get("type") == "audio" for p in self.inputs)
        prompt = any(p.json.get("annotation") == "prompt" for p in self.inputs)
        base, annotation = _split_annotated(hint)
        if self.chat or prompt:
            if base not in (str, ChatCompletionChunk) and not (
                    typing.get_origin(base) is Union
                    and set(typing.get_args(base)) <= {str, ChatCompletionChunk}):
                raise self._fail(None, "of a chat predictor must be str or ChatCompletionChunk "
                                 f"(or an iterator of them), not {_name(base)}")
            for name, kind, type_ in (("text", "text_delta", "string"),
                                      ("finish_reason", "finish_reason", "string"),
                                      ("usage", "usage", "object"),
                                      ("reasoning", "reasoning_delta", "string")):
                param = _Param(name)
                param.json.update(type=type_, annotation=kind)
                if kind != "text_delta":
                    param.json["required"] = False
                self.outputs.append(param)
            self.chat_outputs = True
            return
        parts = [hint]
        if typing.get_origin(base) is tuple:
            parts = list(typing.get_args(base))
            if not parts or parts[-1] is Ellipsis:
                raise self._fail(None, "is a tuple of unknown length; list each output's type")
        for i, part in enumerate(parts):
            name = "output" if len(parts) == 1 else f"output_{i}"
            param = _Param(name)
            try:
                part_base, part_annotation = _split_annotated(part)
                part_base, optional = _strip_optional(part_base)
                generic = part_annotation is None or part_annotation.kind == "generic"
                if generic and part_base is str and takes_audio:
                    param.json["annotation"] = "text_delta"  # the transcription
                _describe_type(param, part_base, part_annotation, output=True)
                self._annotate(param, part_annotation)
                if optional:
                    param.json["required"] = False
            except TypeError as error:
                raise self._fail(None, f"({name}) {error}") from None
            self.outputs.append(param)

    # --- Running ------------------------------------------------------------------------

    def _invoke(self, inputs: Dict[str, Any], logs: Any) -> Iterator[List[Any]]:
        """Called by the engine: converts the inputs and returns the iterator of outputs."""
        kwargs = {}
        for param in self.inputs:
            if param.name in inputs:
                kwargs[param.name] = param.to_python(inputs[param.name])
        return self._run(kwargs, logs)

    def _run(self, kwargs: Dict[str, Any], logs: Any) -> Iterator[List[Any]]:
        runner = _Runner(self, logs)
        try:
            if not self.is_generator:
                call = (lambda: runner.loop.run(self.function(**kwargs))) if self.is_async \
                    else (lambda: self.function(**kwargs))
                yield self._outputs(runner.call(call))
                return
            if self.is_async:
                agen = runner.call(lambda: self.function(**kwargs))
                try:
                    while True:
                        try:
                            item = runner.call(lambda: runner.loop.run(agen.__anext__()))
                        except StopAsyncIteration:
                            return
                        yield self._outputs(item)
                finally:
                    runner.call(lambda: runner.loop.run(agen.aclose()))
            gen = runner.call(lambda: self.function(**kwargs))
            try:
                while True:
                    try:
                        item = runner.call(lambda: next(gen))
                    except StopIteration:
                        return
                    yield self._outputs(item)
            finally:
                runner.call(gen.close)
        finally:
            runner.close()

    def _outputs(self, value: Any) -> List[Any]:
        try:
            if self.chat_outputs:
                return _chat_outputs(value)
            if len(self.outputs) > 1 and not isinstance(value, tuple):
                raise _OutputError(f"is a {type(value).__name__}; it declares a tuple of "
                                   f"{len(self.outputs)} outputs")
            values = list(value) if len(self.outputs) > 1 else [value]
            if len(values) != len(self.outputs):
                raise _OutputError(f"has {len(values)} values; it declares {len(self.outputs)}")
            return [None if v is None else p.from_python(v, f"the output `{p.name}`")
                    for p, v in zip(self.outputs, values)]
        except _OutputError as error:
            raise _PredictorFailed(f"The predictor `{self.tag}` returned a value that breaks its "
                                   f"signature: {error}") from None


def _chat_outputs(value: Any) -> List[Any]:
    """``[text, finish_reason, usage, reasoning]`` of a yielded ``str`` or
    ``ChatCompletionChunk`` (its dict): the delta's ``content`` and ``reasoning_content``."""
    if isinstance(value, str):
        return [value, None, None, None]
    if isinstance(value, ChatCompletionChunk):
        value = value.model_dump()
    if not isinstance(value, dict):
        raise _OutputError(f"is a {type(value).__name__}; a chat predictor gives str or "
                           "ChatCompletionChunk")
    choices = value.get("choices") or [{}]
    choice = choices[0] or {}
    delta = choice.get("delta") or {}
    text = delta.get("content") or ""
    if not isinstance(text, str):
        raise _OutputError("has a delta content that is not a string")
    reasoning = delta.get("reasoning_content") or None
    if reasoning is not None and not isinstance(reasoning, str):
        raise _OutputError("has a delta reasoning_content that is not a string")
    usage = value.get("usage")
    if usage is not None:
        usage = {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens") if k in usage}
    return [text, choice.get("finish_reason"), usage, reasoning]


class _PredictorFailed(Exception):
    """How a predictor's failure reaches the engine: the message becomes the error's."""


class PredictionCancelled(BaseException):
    """Raised inside a predictor whose caller went away (a stream closed, a task cancelled)
    while the predictor was running its own code: it stops there, its ``finally`` blocks run,
    and the prediction ends as cancelled. A ``BaseException``, like ``KeyboardInterrupt``, so
    that ``except Exception`` does not swallow it."""


# The runner executing a predictor's own code for each call (by the native layer's call id),
# for `_interrupt`.
_runners: Dict[int, "_Runner"] = {}
_runners_lock = threading.Lock()


def _interrupt(call: int) -> str:
    """Called by the native layer when the caller of ``call`` went away: "task" when an async
    predictor's task was cancelled; "code" when the predictor's own code runs now (the native
    layer raises ``PredictionCancelled`` in it); "none" when ingle's code runs (the step ends
    by itself, and the call's next step does not start)."""
    with _runners_lock:
        runner = _runners.get(call)
    if runner is None:
        return "none"
    runner.interrupted = True
    if runner.loop.cancel():
        return "task"
    return "code" if runner.in_user_code else "none"


def _after_interrupt(call: int) -> None:
    """Called by the native layer once an interrupted step returned: the exception may have
    arrived in `_Runner.call` after the predictor's code, skipping its unregistering."""
    with _runners_lock:
        _runners.pop(call, None)


# --- Calling into user code: logs, exceptions, event loops ---------------------------------

_current_logs: contextvars.ContextVar[Any] = contextvars.ContextVar("ingle_logs", default=None)


class _Tee:
    """``sys.stdout``/``sys.stderr`` while predictors are registered: text written while a
    predictor runs (in its thread or its tasks) goes to its logs, the rest where it went."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        logs = _current_logs.get()
        if logs is not None:
            logs.write(text)
            return len(text)
        return self._stream.write(text)

    def flush(self) -> None:
        if _current_logs.get() is None:
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_tee_lock = threading.Lock()


def _install_tee() -> None:
    with _tee_lock:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None and not isinstance(stream, _Tee):
                setattr(sys, name, _Tee(stream))


class _Loop:
    """The event loop of one async prediction. It runs in the thread that pulls the
    prediction, or, when that thread already runs a loop (sync ingle called from async code),
    in a helper thread."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._helper: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._task: Optional["asyncio.Future[Any]"] = None
        self._task_lock = threading.Lock()

    def run(self, awaitable: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        loop = self._loop
        with self._task_lock:
            task = self._task = asyncio.ensure_future(awaitable, loop=loop)
        try:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return loop.run_until_complete(task)
            if self._helper is None:
                self._helper = concurrent.futures.ThreadPoolExecutor(1, "ingle-predictor")
            context = contextvars.copy_context()
            return self._helper.submit(context.run, loop.run_until_complete, task).result()
        finally:
            with self._task_lock:
                self._task = None

    def cancel(self) -> bool:
        """Cancels the task running now, from any thread; False when none runs."""
        with self._task_lock:
            task = self._task
            if task is None or self._loop is None:
                return False
            self._loop.call_soon_threadsafe(task.cancel)
            return True

    def close(self) -> None:
        if self._loop is not None:
            if self._helper is not None:
                self._helper.submit(self._loop.close).result()
                self._helper.shutdown()
            else:
                self._loop.close()


class _Runner:
    """Runs pieces of one prediction with its logs in place, and words its failures."""

    def __init__(self, predictor: Predictor, logs: Any) -> None:
        self.predictor = predictor
        self.logs = logs
        self.loop = _Loop()
        self.interrupted = False
        self.in_user_code = False

    def call(self, function: Callable[[], Any]) -> Any:
        # Checked per call: whoever replaced sys.stdout since (pytest does) is wrapped in turn.
        if not isinstance(sys.stdout, _Tee) or not isinstance(sys.stderr, _Tee):
            _install_tee()
        token = _current_logs.set(self.logs)
        call = _ingle.current_call()
        try:
            # Registered only while the predictor's own code runs: an interrupt raises there.
            if call:
                with _runners_lock:
                    _runners[call] = self
                # An interrupt that came before the runner was registered found none: the call
                # is marked cancelled before `_interrupt` looks, so one side always sees it.
                if _ingle.call_cancelled(call):
                    with _runners_lock:
                        _runners.pop(call, None)
                    raise PredictionCancelled()
            try:
                self.in_user_code = True
                return function()
            finally:
                self.in_user_code = False
                if call:
                    with _runners_lock:
                        _runners.pop(call, None)
        except (StopIteration, StopAsyncIteration, GeneratorExit, _PredictorFailed,
                KeyboardInterrupt, SystemExit, PredictionCancelled):
            raise  # the end of a generator, a failure already worded, or the process stopping
        except asyncio.CancelledError:
            if self.interrupted:
                raise PredictionCancelled() from None
            raise _PredictorFailed(f"The predictor `{self.predictor.tag}` was cancelled") from None
        except BaseException as error:
            self.logs.write(traceback.format_exc())
            described = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            raise _PredictorFailed(f"The predictor `{self.predictor.tag}` raised {described}") from None
        finally:
            _current_logs.reset(token)

    def close(self) -> None:
        self.loop.close()


def predictor(tag: str, *, description: Optional[str] = None) -> Callable[[Callable[..., Any]], Predictor]:
    """Makes a function a predictor named ``tag`` (e.g. ``"@me/echo"``). Its parameters'
    type hints give their types, ``Annotated[..., Parameter.X(...)]`` their meaning, and its
    defaults theirs; ``yield`` makes it a generator. A signature that breaks a rule of the
    OpenAI method it claims raises ``PredictorDefinitionError`` here."""

    def wrap(function: Callable[..., Any]) -> Predictor:
        return Predictor(function, tag, description)

    return wrap


def _register(native: _ingle.NativeClient, item: object) -> None:
    if not isinstance(item, Predictor):
        raise TypeError(f"{item!r} is not a predictor; decorate it with @ingle.predictor(tag=...)")
    _install_tee()
    try:
        native.register_predictor(item.declaration, item._invoke)
    except Exception as error:
        if getattr(error, "status_code", None) == 400:
            raise item._definition_error(error) from None
        raise


# What travels beside the JSON of `predictions` inputs.
_RawValue = Union[_ingle.RawTensor, _ingle.RawAudio]
_Raw = TypeVar("_Raw", _ingle.RawTensor, _ingle.RawAudio)


def _split_inputs(inputs: Any) -> Tuple[str, Optional[Dict[str, _RawValue]]]:
    """``predictions`` inputs as JSON, and the arrays and audio that travel beside it."""
    from . import _arguments

    raw: Dict[str, _RawValue] = {}
    if isinstance(inputs, collections.abc.Mapping):
        np = sys.modules.get("numpy")
        rest = {}
        for name, value in inputs.items():
            if isinstance(value, AudioSamples):
                raw[name] = _checked_input(name, lambda: value._raw(f"inputs[{name!r}]"))
            elif np is not None and isinstance(value, np.ndarray):
                raw[name] = _checked_input(name, lambda: _raw_tensor(value, f"inputs[{name!r}]", None))
            else:
                rest[name] = value
        inputs = rest
    return _arguments.inputs(inputs), raw or None


def _checked_input(name: str, convert: Callable[[], _Raw]) -> _Raw:
    from ._exceptions import _invalid_argument

    try:
        return convert()
    except _OutputError as error:
        raise _invalid_argument(name, str(error)) from None
