"""What every resource of ``OpenAI`` and ``AsyncOpenAI`` shares: the resource base, the
streams a ``stream=True`` call returns, and running native calls off the event loop."""

from __future__ import annotations

import asyncio
import json
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Generic,
    Iterator,
    Protocol,
    TypeVar,
)

from . import _ingle
from .types import BaseModel


T = TypeVar("T", bound=BaseModel)
T_co = TypeVar("T_co", bound=BaseModel, covariant=True)
R = TypeVar("R")


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


class _Resource:
    def __init__(self, native: _ingle.NativeClient) -> None:
        self._native = native


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
