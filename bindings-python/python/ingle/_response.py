"""Binary responses (``audio.speech``), shaped like the ``openai`` package's:

- ``HttpxBinaryResponseContent``: what ``create`` returns, the whole file in memory (``openai``'s
  class of that name, less the ``httpx`` response behind it), plus the samples it was encoded
  from (``to_numpy()``);
- ``StreamedBinaryAPIResponse`` and ``AsyncStreamedBinaryAPIResponse``: what
  ``with_streaming_response.create`` gives in its ``with`` block, the audio as it is
  synthesised, a sentence at a time. Leaving the block, closing the response, or ``break``
  out of ``iter_bytes()`` stops synthesis before the next sentence.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import os
from typing import (
    Any,
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    Generic,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    TypeVar,
    Union,
)

from . import _arguments, _ingle
from ._exceptions import StreamAlreadyConsumed

__all__ = [
    "HttpxBinaryResponseContent",
    "StreamedBinaryAPIResponse",
    "AsyncStreamedBinaryAPIResponse",
    "ResponseContextManager",
    "AsyncResponseContextManager",
]

FilePath = Union[str, "os.PathLike[str]"]


class Headers(Mapping[str, str]):
    """The response's headers as the HTTP API would send them (``content-type``, and
    ``content-length`` when the length is known); names are case-insensitive."""

    def __init__(self, headers: Dict[str, str]) -> None:
        self._headers = {name.lower(): value for name, value in headers.items()}

    def __getitem__(self, name: str) -> str:
        return self._headers[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._headers

    def __repr__(self) -> str:
        return f"Headers({self._headers!r})"


class _Chunker:
    """Re-chunks bytes to ``size`` (the last chunk may be shorter), as ``httpx`` does; ``None``
    passes chunks through as they come."""

    def __init__(self, size: Optional[int]) -> None:
        self.size = size
        self.buffer = bytearray()

    def push(self, chunk: bytes) -> List[bytes]:
        if self.size is None:
            return [chunk] if chunk else []
        self.buffer += chunk
        whole = len(self.buffer) // self.size * self.size
        if not whole:
            return []
        ready = bytes(self.buffer[:whole])
        del self.buffer[:whole]
        return [ready[i : i + self.size] for i in range(0, whole, self.size)]

    def flush(self) -> List[bytes]:
        if not self.buffer:
            return []
        rest = bytes(self.buffer)
        self.buffer.clear()
        return [rest]


def _rechunk(chunks: Iterable[bytes], chunk_size: Optional[int]) -> Iterator[bytes]:
    chunker = _Chunker(chunk_size)
    try:
        for chunk in chunks:
            yield from chunker.push(chunk)
        yield from chunker.flush()
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # a stream's generator: `break` stops synthesis now, not at collection


def _text_chunks(chunks: Iterable[bytes]) -> Iterator[str]:
    """UTF-8 text of byte chunks, a character never split between two (invalid bytes become
    U+FFFD)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    text = decoder.decode(b"", final=True)
    if text:
        yield text


class _Lines:
    """Splits text chunks into lines without their line ends (as ``httpx``'s
    ``iter_lines``)."""

    def __init__(self) -> None:
        self.rest = ""

    def push(self, text: str) -> List[str]:
        lines = (self.rest + text).splitlines(keepends=True)
        self.rest = ""
        if lines and not lines[-1].endswith(("\n", "\r")):
            self.rest = lines.pop()
        elif lines and lines[-1].endswith("\r"):
            self.rest = lines.pop()  # may be the first half of "\r\n"
        return [line.rstrip("\r\n") for line in lines]

    def flush(self) -> List[str]:
        rest, self.rest = self.rest, ""
        return [rest.rstrip("\r\n")] if rest else []


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError(
            "to_numpy() needs NumPy, which is not installed: pip install numpy"
        ) from None
    return numpy


class HttpxBinaryResponseContent:
    """What ``client.audio.speech.create`` returns: the whole audio file (``openai``'s class of
    the same name, with no HTTP response behind it).

    ``content`` is the file, in the requested ``response_format`` (``mp3`` by default), with
    exact headers (a ``wav``'s sizes, a ``flac``'s length and MD5); with
    ``stream_format="sse"`` it is the text of every server-sent event instead.
    ``to_numpy()`` is the audio the model produced, as float32 samples at ``sample_rate``,
    before encoding."""

    def __init__(
        self,
        content: bytes,
        content_type: str,
        samples: Optional[bytes] = None,
        sample_rate: Optional[int] = None,
        channels: Optional[int] = None,
    ) -> None:
        self._content = content
        self._samples = samples
        self.content_type: str = content_type
        """The MIME type: ``audio/mpeg``, ``audio/ogg`` (opus), ``audio/aac``, ``audio/flac``,
        ``audio/wav``, ``audio/pcm``, or ``text/event-stream`` for SSE."""
        self.sample_rate: Optional[int] = sample_rate if samples is not None else None
        """The rate of ``to_numpy()``'s samples, in Hz (the model's; ``None`` for SSE)."""
        self.channels: Optional[int] = channels if samples is not None else None
        """The channels of ``to_numpy()``'s samples (``None`` for SSE)."""
        self.headers = Headers(
            {"content-type": content_type, "content-length": str(len(content))}
        )

    @property
    def content(self) -> bytes:
        """The whole response body."""
        return self._content

    @property
    def text(self) -> str:
        """The content decoded as UTF-8 (meaningful for SSE, not for audio)."""
        return self._content.decode("utf-8", errors="replace")

    @property
    def encoding(self) -> Optional[str]:
        return "utf-8"

    @property
    def charset_encoding(self) -> Optional[str]:
        return None

    def json(self, **kwargs: Any) -> Any:
        return json.loads(self._content, **kwargs)

    def read(self) -> bytes:
        """The content (it is all in memory)."""
        return self._content

    def iter_bytes(self, chunk_size: Optional[int] = None) -> Iterator[bytes]:
        """The content in chunks of ``chunk_size`` bytes (the last may be shorter), or as one
        chunk."""
        return _rechunk([self._content], _arguments.chunk_size(chunk_size))

    def iter_raw(self, chunk_size: Optional[int] = None) -> Iterator[bytes]:
        return self.iter_bytes(chunk_size)

    def iter_text(self, chunk_size: Optional[int] = None) -> Iterator[str]:
        return _text_chunks(self.iter_bytes(chunk_size))

    def iter_lines(self) -> Iterator[str]:
        return iter(self.text.splitlines())

    def write_to_file(self, file: FilePath) -> None:
        """Writes the content to ``file`` (a path). To write audio as it is synthesised, use
        ``client.audio.speech.with_streaming_response.create(...)`` and ``stream_to_file``."""
        with open(file, mode="wb") as f:
            f.write(self._content)

    def stream_to_file(self, file: FilePath, *, chunk_size: Optional[int] = None) -> None:
        """``write_to_file`` in chunks: the content is already whole here (in ``openai`` this
        method is deprecated for that reason); ``with_streaming_response`` streams."""
        with open(file, mode="wb") as f:
            for data in self.iter_bytes(chunk_size):
                f.write(data)

    def close(self) -> None:
        """Nothing to release: the content is in memory."""

    async def aread(self) -> bytes:
        return self._content

    async def aiter_bytes(self, chunk_size: Optional[int] = None) -> AsyncIterator[bytes]:
        # As openai's: awaited, it gives the iterator (`async for b in await r.aiter_bytes()`).
        return _aiter(self.iter_bytes(chunk_size))

    async def aiter_raw(self, chunk_size: Optional[int] = None) -> AsyncIterator[bytes]:
        return _aiter(self.iter_bytes(chunk_size))

    async def aiter_text(self, chunk_size: Optional[int] = None) -> AsyncIterator[str]:
        return _aiter(self.iter_text(chunk_size))

    async def aiter_lines(self) -> AsyncIterator[str]:
        return _aiter(self.iter_lines())

    async def astream_to_file(self, file: FilePath, *, chunk_size: Optional[int] = None) -> None:
        """``stream_to_file``, in a worker thread."""
        await asyncio.to_thread(self.stream_to_file, file, chunk_size=chunk_size)

    async def aclose(self) -> None:
        """Nothing to release."""

    def to_numpy(self) -> Any:
        """The audio as the model produced it: a read-only float32 ``numpy.ndarray`` at
        ``sample_rate`` (1-D for mono, ``(frames, channels)`` otherwise), before the encoding
        of ``response_format``; ``len(r.to_numpy()) / r.sample_rate`` is the duration in
        seconds. Needs ``numpy``. A ``stream_format="sse"`` response has no samples."""
        if self._samples is None:
            raise ValueError(
                "this response holds server-sent events (stream_format='sse'), not samples: "
                "request stream_format='audio' (the default) for to_numpy()"
            )
        numpy = _numpy()
        samples = numpy.frombuffer(self._samples, dtype=numpy.float32)
        if self.channels and self.channels > 1:
            samples = samples.reshape(-1, self.channels)
        return samples

    def __repr__(self) -> str:
        return (
            f"<HttpxBinaryResponseContent {self.content_type}, {len(self._content)} bytes"
            + (f", {self.sample_rate} Hz" if self.sample_rate else "")
            + ">"
        )


T = TypeVar("T")


async def _aiter(items: Iterable[T]) -> AsyncIterator[T]:
    for item in items:
        yield item


class StreamedBinaryAPIResponse:
    """The response inside ``with client.audio.speech.with_streaming_response.create(...) as
    r:`` (``openai``'s class of the same name): the audio is synthesised as it is read.

    ``iter_bytes()`` yields each sentence's audio as soon as it is encoded;
    ``stream_to_file(path)`` writes it so; ``read()`` waits for all of it. The body is read
    once: iterate it, or ``read()`` it (after which ``iter_bytes()`` gives the content again).
    Stopping early (leaving the ``with`` block, ``close()``, ``break`` out of ``iter_bytes()``,
    an exception, garbage collection) stops synthesis before the next sentence.

    Streamed ``wav`` and ``flac`` have headers that cannot know the length (as from the HTTP
    API); ``pcm`` is raw 16-bit little-endian mono at 24 kHz."""

    status_code: int = 200

    def __init__(self, native: _ingle.NativeSpeechStream) -> None:
        self._native = native
        self._content: Optional[bytes] = None
        self._consumed = False
        self.content_type: str = native.content_type
        """The MIME type of the body: the audio format's, or ``text/event-stream`` for SSE."""
        self.headers = Headers({"content-type": self.content_type})

    @property
    def is_closed(self) -> bool:
        """Whether synthesis is over: read to the end, or stopped."""
        return bool(self._native.closed)

    def _chunks(self) -> Iterator[bytes]:
        if self._content is not None:
            yield self._content
            return
        if self._consumed:
            raise StreamAlreadyConsumed()
        self._consumed = True
        try:
            while True:
                try:
                    chunk = next(self._native)
                except StopIteration:
                    return
                yield chunk
        finally:
            # `break`, an engine error, or KeyboardInterrupt while waiting: stop synthesis.
            self._native.close()

    def iter_bytes(self, chunk_size: Optional[int] = None) -> Iterator[bytes]:
        """The audio as it is synthesised: a chunk per sentence, or re-chunked to
        ``chunk_size`` bytes (the last may be shorter)."""
        return _rechunk(self._chunks(), _arguments.chunk_size(chunk_size))

    def iter_text(self, chunk_size: Optional[int] = None) -> Iterator[str]:
        """The body as UTF-8 text as it comes (for ``stream_format="sse"``)."""
        return _text_chunks(self.iter_bytes(chunk_size))

    def iter_lines(self) -> Iterator[str]:
        """The body's lines as they come (for ``stream_format="sse"``: ``data: {...}`` and
        blank lines)."""
        lines = _Lines()
        for text in self.iter_text():
            yield from lines.push(text)
        yield from lines.flush()

    def read(self) -> bytes:
        """Waits for the whole body, and returns it."""
        if self._content is None:
            self._content = b"".join(self._chunks())
        return self._content

    def parse(self) -> bytes:
        """The body (``openai``'s ``APIResponse[bytes].parse()``)."""
        return self.read()

    def text(self) -> str:
        """The whole body decoded as UTF-8."""
        return self.read().decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.read())

    def stream_to_file(self, file: FilePath, *, chunk_size: Optional[int] = None) -> None:
        """Writes the audio to ``file`` (a path) as it is synthesised."""
        with open(file, mode="wb") as f:
            for data in self.iter_bytes(chunk_size):
                f.write(data)

    def close(self) -> None:
        """Stops synthesis. Safe to call more than once."""
        self._native.close()

    def __del__(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None:
            native.close()

    def __repr__(self) -> str:
        return f"<StreamedBinaryAPIResponse {self.content_type}>"


class AsyncStreamedBinaryAPIResponse:
    """The async twin of ``StreamedBinaryAPIResponse``, inside ``async with
    client.audio.speech.with_streaming_response.create(...) as r:``. ``async for chunk in
    r.iter_bytes()``; ``await r.read()``, ``await r.stream_to_file(path)``. Each chunk is
    awaited in a worker thread, so the event loop never blocks; cancelling the task, leaving
    the block or ``break`` stops synthesis before the next sentence."""

    status_code: int = 200

    def __init__(self, native: _ingle.NativeSpeechStream) -> None:
        self._native = native
        self._content: Optional[bytes] = None
        self._consumed = False
        self.content_type: str = native.content_type
        self.headers = Headers({"content-type": self.content_type})

    @property
    def is_closed(self) -> bool:
        """Whether synthesis is over: read to the end, or stopped."""
        return bool(self._native.closed)

    async def _chunks(self) -> AsyncGenerator[bytes, None]:
        if self._content is not None:
            yield self._content
            return
        if self._consumed:
            raise StreamAlreadyConsumed()
        self._consumed = True
        try:
            while True:
                chunk = await asyncio.to_thread(next, self._native, None)
                if chunk is None:
                    return
                yield chunk
        finally:
            # `break`, a cancelled task, an engine error: stop synthesis (a worker thread still
            # waiting finishes its sentence, then drops the stream).
            self._native.close()

    async def _rechunked(self, chunk_size: Optional[int]) -> AsyncGenerator[bytes, None]:
        chunker = _Chunker(chunk_size)
        chunks = self._chunks()
        try:
            async for chunk in chunks:
                for piece in chunker.push(chunk):
                    yield piece
            for piece in chunker.flush():
                yield piece
        finally:
            await chunks.aclose()

    def iter_bytes(self, chunk_size: Optional[int] = None) -> AsyncIterator[bytes]:
        """The audio as it is synthesised (``async for``): a chunk per sentence, or re-chunked
        to ``chunk_size`` bytes."""
        return self._rechunked(_arguments.chunk_size(chunk_size))

    async def _text(self, chunk_size: Optional[int]) -> AsyncIterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        async for chunk in self.iter_bytes(chunk_size):
            text = decoder.decode(chunk)
            if text:
                yield text
        text = decoder.decode(b"", final=True)
        if text:
            yield text

    def iter_text(self, chunk_size: Optional[int] = None) -> AsyncIterator[str]:
        _arguments.chunk_size(chunk_size)
        return self._text(chunk_size)

    async def iter_lines(self) -> AsyncIterator[str]:
        lines = _Lines()
        async for text in self._text(None):
            for line in lines.push(text):
                yield line
        for line in lines.flush():
            yield line

    async def read(self) -> bytes:
        """Waits for the whole body, and returns it."""
        if self._content is None:
            self._content = b"".join([chunk async for chunk in self._chunks()])
        return self._content

    async def parse(self) -> bytes:
        return await self.read()

    async def text(self) -> str:
        return (await self.read()).decode("utf-8", errors="replace")

    async def json(self) -> Any:
        return json.loads(await self.read())

    async def stream_to_file(self, file: FilePath, *, chunk_size: Optional[int] = None) -> None:
        """Writes the audio to ``file`` as it is synthesised (file writes in a worker thread)."""
        chunks = self._rechunked(_arguments.chunk_size(chunk_size))
        f = await asyncio.to_thread(open, file, "wb")
        try:
            async for data in chunks:
                await asyncio.to_thread(f.write, data)
        finally:
            await chunks.aclose()
            await asyncio.to_thread(f.close)

    async def close(self) -> None:
        """Stops synthesis."""
        self._native.close()

    def __del__(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None:
            native.close()

    def __repr__(self) -> str:
        return f"<AsyncStreamedBinaryAPIResponse {self.content_type}>"


R = TypeVar("R", bound=StreamedBinaryAPIResponse)
AR = TypeVar("AR", bound=AsyncStreamedBinaryAPIResponse)


class ResponseContextManager(Generic[R]):
    """What ``with_streaming_response.create(...)`` returns: the request starts when the
    ``with`` block is entered, and the response is closed (synthesis stopped) when it is
    left."""

    def __init__(self, request: Callable[[], R]) -> None:
        self._request = request
        self._response: Optional[R] = None

    def __enter__(self) -> R:
        self._response = self._request()
        return self._response

    def __exit__(self, *exc: Any) -> None:
        if self._response is not None:
            self._response.close()


class AsyncResponseContextManager(Generic[AR]):
    """``ResponseContextManager`` for ``async with``."""

    def __init__(self, request: Callable[[], Awaitable[AR]]) -> None:
        self._request = request
        self._response: Optional[AR] = None

    async def __aenter__(self) -> AR:
        self._response = await self._request()
        return self._response

    async def __aexit__(self, *exc: Any) -> None:
        if self._response is not None:
            await self._response.close()
