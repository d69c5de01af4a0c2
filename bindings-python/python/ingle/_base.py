"""What every resource of ``OpenAI`` and ``AsyncOpenAI`` shares: resources written once for both
clients (`_Resource`, `_Call`, `_method`), the streams a ``stream=True`` call returns, and
running native calls off the event loop.

A resource's method is written once, as a function that checks its arguments and returns a
`_Call`: the native function to run, its arguments, and what its result becomes. `_method`
makes it a method of the resource in both modes: on a `_Resource[Sync]` (``OpenAI``'s) it runs
the call and returns its result; on a `_Resource[Async]` (``AsyncOpenAI``'s) it is a coroutine
function that checks the arguments when awaited and runs the call in a worker thread (a whole
response cancellable: cancelling the awaiting task stops generation)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import sys
import types
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    Callable,
    Coroutine,
    Dict,
    Generic,
    Iterator,
    Literal,
    Optional,
    Protocol,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

if TYPE_CHECKING:
    from typing_extensions import Concatenate, ParamSpec

from . import _ingle
from .types import BaseModel


T = TypeVar("T", bound=BaseModel)
T_co = TypeVar("T_co", bound=BaseModel, covariant=True)
R = TypeVar("R")
W = TypeVar("W")  # the whole answer of a create that can stream
W_co = TypeVar("W_co", covariant=True)
S = TypeVar("S")  # what a call gives in OpenAI
A = TypeVar("A")  # what it gives in AsyncOpenAI, awaited
M = TypeVar("M", bound="_Mode")
# What an AsyncOpenAI method returns: a coroutine (so that mypy reports one left un-awaited).
_Awaited = Coroutine[Any, Any, R]
if TYPE_CHECKING:
    P = ParamSpec("P")  # a method's parameters
elif sys.version_info >= (3, 10):
    from typing import ParamSpec

    P = ParamSpec("P")
else:  # Python 3.9 has no ParamSpec; a type variable stands in for `Generic[...]` at runtime
    P = TypeVar("P")


class _Constructs(Protocol[T_co]):
    """What builds a stream's items from their JSON: a ``BaseModel`` class, or a class whose
    ``construct`` picks the type by the event (``_TranscriptionStreamEvents``)."""

    def construct(self, data: Dict[str, Any]) -> T_co: ...


class Stream(Generic[T]):
    """Yields response chunks. Stopping early (``break``, ``close()``, leaving a ``with``
    block, garbage collection, Ctrl-C) stops generation at once."""

    def __init__(self, native: _ingle.NativeStream, cls: _Constructs[T]) -> None:
        self._native = native
        self._cls = cls

    def __next__(self) -> T:
        try:
            text = next(self._native)
        except BaseException:  # StopIteration, an engine error, or KeyboardInterrupt
            self.close()
            raise
        return self._cls.construct(json.loads(text))

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

    def __init__(self, native: _ingle.NativeStream, cls: _Constructs[T]) -> None:
        self._native = native
        self._cls = cls

    async def __anext__(self) -> T:
        text = await asyncio.to_thread(next, self._native, None)
        if text is None:
            await self.close()
            raise StopAsyncIteration
        return self._cls.construct(json.loads(text))

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


class _Mode:
    """How a client's methods run: `Sync` or `Async`."""

    is_async = False


class Sync(_Mode):
    """``OpenAI``'s: a method runs on the caller's thread and returns its result."""


class Async(_Mode):
    """``AsyncOpenAI``'s: a method is awaited, its work done in a worker thread."""

    is_async = True


class _Resource(Generic[M]):
    """A group of methods over the engine (``chat.completions``, ``audio.speech``...), of one
    client and so of one mode."""

    def __init__(self, native: _ingle.NativeClient, mode: Type[M]) -> None:
        self._native = native
        self._mode = mode


class _Call(Generic[S, A]):
    """What one call of a method asks of the engine: ``function(*args)`` (a `NativeClient`
    method; one that takes ``cancel=`` when ``cancellable``), and what its result becomes in
    each mode."""

    __slots__ = ("function", "args", "cancellable", "sync", "async_")

    def __init__(
        self,
        function: Callable[..., Any],
        args: Tuple[Any, ...],
        sync: Callable[[Any], S],
        async_: Callable[[Any], A],
        cancellable: bool,
    ) -> None:
        self.function = function
        self.args = args
        self.sync = sync
        self.async_ = async_
        self.cancellable = cancellable


def _whole(
    read: Callable[[Any], R], function: Callable[..., Any], *args: Any, cancellable: bool = True
) -> _Call[R, R]:
    """A call whose result ``read`` turns into the answer, the same in both modes. A call that
    generates is ``cancellable``; one that only reads (a list, the disk) is not."""
    return _Call(function, args, read, read, cancellable)


def _json(construct: Callable[[Dict[str, Any]], R]) -> Callable[[str], R]:
    """How to read a native call's JSON text: ``construct`` applied to the object."""
    return lambda text: construct(json.loads(text))


def _streamed(
    item: _Constructs[T],
    function: Callable[..., Any],
    *args: Any,
    kinds: Tuple[Type[Stream[T]], Type[AsyncStream[T]]] = (Stream, AsyncStream),
    cancellable: bool = False,
) -> _Call[Stream[T], AsyncStream[T]]:
    """A call that opens a native stream, given as a ``Stream`` of ``item`` (an ``AsyncStream``
    in AsyncOpenAI): ``kinds`` are the two classes."""
    sync, async_ = kinds
    return _Call(
        function, args, lambda native: sync(native, item), lambda native: async_(native, item), cancellable
    )


def _nothing() -> None:
    return None


def _either(sync: Callable[[], S], async_: Callable[[], A]) -> _Call[S, A]:
    """A call of no native function: its result is ``sync()`` in OpenAI, ``async_()`` in
    AsyncOpenAI (each a context manager that starts the work on entry, for `_direct`)."""
    return _Call(_nothing, (), lambda _: sync(), lambda _: async_(), cancellable=False)


def _run(call: _Call[S, A]) -> S:
    return call.sync(call.function(*call.args))


async def _run_async(call: _Call[S, A]) -> A:
    if call.cancellable:
        return call.async_(await _cancellable(call.function, *call.args))
    return call.async_(await _in_thread(call.function, *call.args))


class _method(Generic[P, S, A]):
    """A resource's method, written once as a function that returns its `_Call`: on an
    ``OpenAI`` resource it returns the call's result; on an ``AsyncOpenAI`` resource it is a
    coroutine function (``inspect.iscoroutinefunction`` is true, as frameworks that wrap
    ``create`` check), its arguments checked when it is awaited.

    Each mode's function is made once, here, and bound to the resource as a plain method is
    (``types.MethodType``): nothing is kept on the resource, so a client is freed as soon as it
    is dropped, and a patch of the class's attribute (``mock.patch.object``, ``wrapt``) is seen
    by every resource."""

    def __init__(self, prepare: "Callable[Concatenate[Any, P], _Call[S, A]]") -> None:
        self._prepare = prepare
        self.__doc__ = prepare.__doc__
        # Its name and docstring are the function's (its name the attribute's, once set); its
        # signature is the function's without the `_Call` it returns.
        signature = inspect.signature(prepare).replace(return_annotation=inspect.Signature.empty)
        self._functions = (self._in_sync(), self._in_async())
        for function in self._functions:
            functools.update_wrapper(function, prepare)
            del function.__wrapped__  # type: ignore[attr-defined]
            function.__signature__ = signature  # type: ignore[attr-defined]

    def _in_sync(self) -> Callable[..., Any]:
        prepare = self._prepare

        def method(resource: "_Resource[Any]", /, *args: Any, **kwargs: Any) -> Any:
            return _run(prepare(resource, *args, **kwargs))

        return method

    def _in_async(self) -> Callable[..., Any]:
        prepare = self._prepare

        async def method(resource: "_Resource[Any]", /, *args: Any, **kwargs: Any) -> Any:
            return await _run_async(prepare(resource, *args, **kwargs))

        return method

    def __set_name__(self, owner: Any, name: str) -> None:
        for function in self._functions:
            function.__name__ = name
            function.__qualname__ = f"{owner.__qualname__}.{name}"

    @overload
    def __get__(self, resource: None, owner: Any) -> "_method[P, S, A]": ...
    @overload
    def __get__(self, resource: "_Resource[Sync]", owner: Any) -> "Callable[P, S]": ...
    @overload
    def __get__(self, resource: "_Resource[Async]", owner: Any) -> "Callable[P, _Awaited[A]]": ...
    def __get__(self, resource: "Optional[_Resource[Any]]", owner: Any) -> Any:
        if resource is None:
            return self
        return types.MethodType(self._functions[resource._mode.is_async], resource)

    def __call__(self, resource: "_Resource[Any]", /, *args: Any, **kwargs: Any) -> Any:
        """Called through the class (``ChatCompletions.create(resource, ...)``), as a plain
        method can be."""
        return self._functions[resource._mode.is_async](resource, *args, **kwargs)


class _SyncCreate(Protocol[W_co, T]):
    """A create method of ``OpenAI`` whose ``stream=True`` gives a ``Stream``."""

    @overload
    def __call__(self, *, stream: Literal[True], **params: Any) -> Stream[T]: ...
    @overload
    def __call__(self, *, stream: Literal[False] = ..., **params: Any) -> W_co: ...
    @overload
    def __call__(self, *, stream: bool, **params: Any) -> Union[W_co, Stream[T]]: ...


class _AsyncCreate(Protocol[W_co, T]):
    """A create method of ``AsyncOpenAI`` whose ``stream=True`` gives an ``AsyncStream``."""

    @overload
    def __call__(self, *, stream: Literal[True], **params: Any) -> _Awaited[AsyncStream[T]]: ...
    @overload
    def __call__(self, *, stream: Literal[False] = ..., **params: Any) -> _Awaited[W_co]: ...
    @overload
    def __call__(self, *, stream: bool, **params: Any) -> _Awaited[Union[W_co, AsyncStream[T]]]: ...


class _streaming(Generic[W, T]):
    """A create method whose ``stream=True`` streams (``chat.completions.create``...): a
    `_method` typed with overloads on ``stream`` in each mode. Its function returns the whole
    answer's `_Call` or the stream's."""

    def __init__(
        self, prepare: Callable[..., Union[_Call[W, W], _Call[Stream[T], AsyncStream[T]]]]
    ) -> None:
        self._method: _method[..., Any, Any] = _method(prepare)
        self.__doc__ = prepare.__doc__

    def __set_name__(self, owner: Any, name: str) -> None:
        self._method.__set_name__(owner, name)

    @overload
    def __get__(self, resource: None, owner: Any) -> "_streaming[W, T]": ...
    @overload
    def __get__(self, resource: "_Resource[Sync]", owner: Any) -> _SyncCreate[W, T]: ...
    @overload
    def __get__(self, resource: "_Resource[Async]", owner: Any) -> _AsyncCreate[W, T]: ...
    def __get__(self, resource: "Optional[_Resource[Any]]", owner: Any) -> Any:
        return self if resource is None else self._method.__get__(resource, owner)

    def __call__(self, resource: "_Resource[Any]", /, *args: Any, **kwargs: Any) -> Any:
        return self._method(resource, *args, **kwargs)


class _direct(_method[P, S, A]):
    """A resource's method that is not awaited in either mode: its `_Call` runs on the caller's
    thread and gives a context manager that starts the work on entry (``responses.stream``,
    ``with_streaming_response.create``), a different one in each mode."""

    @overload  # type: ignore[override]
    def __get__(self, resource: None, owner: Any) -> "_direct[P, S, A]": ...
    @overload
    def __get__(self, resource: "_Resource[Sync]", owner: Any) -> "Callable[P, S]": ...
    @overload
    def __get__(self, resource: "_Resource[Async]", owner: Any) -> "Callable[P, A]": ...
    def __get__(self, resource: "Optional[_Resource[Any]]", owner: Any) -> Any:
        return super().__get__(resource, owner)

    def _in_async(self) -> Callable[..., Any]:
        prepare = self._prepare

        def method(resource: "_Resource[Any]", /, *args: Any, **kwargs: Any) -> Any:
            call = prepare(resource, *args, **kwargs)
            return call.async_(call.function(*call.args))

        return method


async def _in_thread(function: Callable[..., R], *args: Any) -> R:
    return await asyncio.to_thread(function, *args)


# `function` takes a `cancel=` keyword besides `args` (a `NativeClient` method).
async def _cancellable(function: Callable[..., R], *args: Any) -> R:
    """Runs a whole-response create in a worker thread; cancelling the awaiting task stops
    generation at the next token (the next sentence, the next segment)."""
    cancel = _ingle.CancelFlag()
    try:
        return await asyncio.to_thread(function, *args, cancel=cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise
