"""``Anthropic`` and ``AsyncAnthropic``: the ``anthropic`` client's Messages API over the
in-process engine (``messages.create``, ``messages.stream`` with its helpers,
``messages.count_tokens``), on every chat model, users' predictors included.

Only conversion happens here, as in ``_client``: keyword arguments become Anthropic's JSON
request, the core (``core/src/anthropic``) maps it onto chat completions, and its JSON becomes
``ingle.types.anthropic`` objects. Errors are ingle's exceptions (named as the anthropic
package's: ``BadRequestError``, ``NotFoundError``, ``InternalServerError``) with Anthropic's
error object as their ``body``.
"""

from __future__ import annotations

import contextlib
import json
from typing import (
    TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterator, List, Literal, Optional,
    Tuple, Union, cast, overload,
)

from . import _arguments, _exceptions, _structured
from ._base import (
    _Awaited,
    M, Async, AsyncStream, Stream, Sync, _Call, _direct, _either, _in_thread, _method, _Resource, _streamed, _streaming, _whole,
)
from ._client import _Clients, _Closes, _ClosesAsync
from .types.anthropic import (
    ContentBlock, Message, MessageDelta, MessageStreamEvent, MessageTokensCount,
)

__all__ = ["Anthropic", "AsyncAnthropic", "MessageStream", "AsyncMessageStream"]

# Anthropic's error types by HTTP status (its API's table; the core's for the same errors).
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}
_STATUSES = {kind: status for status, kind in _ERROR_TYPES.items() if status != 503}


def _in_anthropic_terms(error: _exceptions.APIStatusError) -> _exceptions.APIStatusError:
    """``error`` with Anthropic's error object as its body (``{"type": "error", "error":
    {"type", "message"}}``) and its type as ``type``; its class and ``param`` are kept."""
    kind = _ERROR_TYPES.get(error.status_code, "api_error")
    error.type = kind
    error.body = {"type": "error", "error": {"type": kind, "message": error.message}}
    return error


@contextlib.contextmanager
def _anthropic_errors() -> Iterator[None]:
    try:
        yield
    except _exceptions.APIStatusError as error:
        raise _in_anthropic_terms(error) from None


def _raised(event: Dict[str, Any]) -> _exceptions.APIStatusError:
    """The exception for an ``error`` event (a failure after the stream began), as the
    anthropic client raises it."""
    error = event.get("error") or {}
    kind = error.get("type") or "api_error"
    message = error.get("message") or "The stream failed"
    status = _STATUSES.get(kind, 500)
    cls = {400: _exceptions.BadRequestError, 404: _exceptions.NotFoundError}.get(
        status, _exceptions.InternalServerError
    )
    return cls(message, status_code=status, body=event, type=kind)


class _Events(Stream[MessageStreamEvent]):
    """The raw events of ``create(stream=True)``, as the anthropic client gives them: ``ping``
    left out, an ``error`` event raised."""

    def __next__(self) -> MessageStreamEvent:
        with _anthropic_errors():
            event = super().__next__()
            while event.type == "ping":
                event = super().__next__()
        if event.type == "error":
            self.close()
            raise _raised(event.model_dump())
        return event


class _AsyncEvents(AsyncStream[MessageStreamEvent]):
    async def __anext__(self) -> MessageStreamEvent:
        with _anthropic_errors():
            event = await super().__anext__()
            while event.type == "ping":
                event = await super().__anext__()
        if event.type == "error":
            await self.close()
            raise _raised(event.model_dump())
        return event


class _Snapshot:
    """The message as the events so far make it (the anthropic client's ``accumulate_event``
    and ``build_events``): the events the helper gives for each raw one."""

    def __init__(self, read: Optional[Callable[[str], Any]] = None) -> None:
        self.message: Optional[Message] = None
        self.stopped = False
        self._json: Dict[int, str] = {}
        self._read = read  # output_format's reader: a text block's parsed_output

    def events(self, event: MessageStreamEvent) -> List[MessageStreamEvent]:
        if event.type == "message_start":
            self.message = Message.construct(event.message.model_dump())  # type: ignore[union-attr]
            return [event]
        message = self.message
        if message is None or event.type not in (
            "content_block_start", "content_block_delta", "content_block_stop",
            "message_delta", "message_stop",
        ):
            return [event]
        if event.type == "content_block_start":
            message.content.append(ContentBlock.construct(event.content_block.model_dump()))  # type: ignore[union-attr]
            return [event]
        if event.type == "message_delta":
            message.stop_reason = event.delta.stop_reason  # type: ignore[union-attr]
            message.stop_sequence = event.delta.stop_sequence  # type: ignore[union-attr]
            for name, value in (event.usage.model_dump() if event.usage else {}).items():
                if value is not None:
                    setattr(message.usage, name, value)
            return [event]
        if event.type == "message_stop":
            self.stopped = True
            return [MessageStreamEvent(type="message_stop", message=message)]
        # A content block's event: it has its `index` (a delta event its `delta`) by its type.
        index = cast(int, event.index)
        block = message.content[index]
        if event.type == "content_block_stop":
            if block.type == "text" and self._read is not None:
                block._parsed = self._read(block.text or "")
            return [MessageStreamEvent(type="content_block_stop", index=event.index, content_block=block)]
        delta = cast(MessageDelta, event.delta)
        if delta.type == "text_delta" and block.type == "text":
            text = cast(str, delta.text)  # a text_delta has its text
            block.text = (block.text or "") + text
            return [event, MessageStreamEvent(type="text", text=text, snapshot=block.text)]
        if delta.type == "input_json_delta" and block.type == "tool_use":
            buffer = self._json.get(index, "") + (delta.partial_json or "")
            self._json[index] = buffer
            try:  # the input so far, once what has come parses (the client reads partial JSON)
                block.input = json.loads(buffer)
            except ValueError:
                pass
            return [event, MessageStreamEvent(type="input_json", partial_json=delta.partial_json, snapshot=block.input)]
        return [event]


def _finished(snapshot: "_Snapshot") -> Message:
    """The final message; a stream closed before `message_stop` has none."""
    if snapshot.message is None or not snapshot.stopped:
        raise _exceptions.OpenAIError(
            "the stream was closed before the message ended (no message_stop): there is no "
            "final message")
    return snapshot.message


def _final_text(message: Message) -> str:
    texts = [block.text or "" for block in message.content if block.type == "text"]
    if not texts:
        kinds = ",".join(block.type for block in message.content)
        raise RuntimeError(
            ".get_final_text() can only be called when the API returns a `text` content block.\n"
            f"The API returned {kinds} content block type(s) that you can access by calling "
            "get_final_message().content"
        )
    return "".join(texts)


class MessageStream:
    """What ``with client.messages.stream(...) as stream`` gives, as the anthropic client's:
    iterate the events (with the helper's ``text`` and ``input_json`` ones), or ``text_stream``;
    then ``get_final_message()`` / ``get_final_text()``. Leaving early stops generation."""

    def __init__(self, events: _Events, read: Optional[Callable[[str], Any]] = None) -> None:
        self._events = events
        self._snapshot = _Snapshot(read)
        self._done = False
        self._iterator = self._stream()
        self.text_stream: Iterator[str] = self._text()

    def _stream(self) -> Iterator[MessageStreamEvent]:
        for raw in self._events:
            yield from self._snapshot.events(raw)
        self._done = True

    def __next__(self) -> MessageStreamEvent:
        return next(self._iterator)

    def __iter__(self) -> Iterator[MessageStreamEvent]:
        # Not `yield from`: a `break` closes this generator only, not the stream, so
        # get_final_message() still reads it to its end (as the anthropic client's).
        for event in self._iterator:
            yield event

    def _text(self) -> Iterator[str]:
        for event in self:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":  # type: ignore[union-attr]
                yield event.delta.text  # type: ignore[union-attr, misc]

    def until_done(self) -> None:
        for _ in self:
            pass

    @property
    def current_message_snapshot(self) -> Message:
        assert self._snapshot.message is not None, "no message_start yet"
        return self._snapshot.message

    def get_final_message(self) -> Message:
        """The whole message, once the stream has been read to its end."""
        if not self._done:
            self.until_done()
        return _finished(self._snapshot)

    def get_final_text(self) -> str:
        """The text blocks of the final message, joined."""
        return _final_text(self.get_final_message())

    def close(self) -> None:
        self._events.close()

    def __enter__(self) -> "MessageStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncMessageStream:
    """The async twin of `MessageStream`: ``async with``, ``async for``, ``text_stream``,
    ``await get_final_message()``."""

    def __init__(self, events: _AsyncEvents, read: Optional[Callable[[str], Any]] = None) -> None:
        self._events = events
        self._snapshot = _Snapshot(read)
        self._done = False
        self._iterator = self._stream()
        self.text_stream: AsyncIterator[str] = self._text()

    async def _stream(self) -> AsyncIterator[MessageStreamEvent]:
        async for raw in self._events:
            for event in self._snapshot.events(raw):
                yield event
        self._done = True

    async def __anext__(self) -> MessageStreamEvent:
        return await self._iterator.__anext__()

    async def __aiter__(self) -> AsyncIterator[MessageStreamEvent]:
        async for event in self._iterator:
            yield event

    async def _text(self) -> AsyncIterator[str]:
        async for event in self:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":  # type: ignore[union-attr]
                yield event.delta.text  # type: ignore[union-attr, misc]

    async def until_done(self) -> None:
        async for _ in self:
            pass

    @property
    def current_message_snapshot(self) -> Message:
        assert self._snapshot.message is not None, "no message_start yet"
        return self._snapshot.message

    async def get_final_message(self) -> Message:
        if not self._done:
            await self.until_done()
        return _finished(self._snapshot)

    async def get_final_text(self) -> str:
        return _final_text(await self.get_final_message())

    async def close(self) -> None:
        await self._events.close()

    async def __aenter__(self) -> "AsyncMessageStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class _MessageStreamManager:
    """``with client.messages.stream(...) as stream``: the stream starts on entry."""

    def __init__(self, native: Any, body: str, read: Optional[Callable[[str], Any]]) -> None:
        self._native = native
        self._body = body
        self._read = read
        self._stream: Optional[MessageStream] = None

    def __enter__(self) -> MessageStream:
        with _anthropic_errors():
            native = self._native.stream("messages.stream", self._body)
        self._stream = MessageStream(_Events(native, MessageStreamEvent), self._read)
        return self._stream

    def __exit__(self, *exc: Any) -> None:
        if self._stream is not None:
            self._stream.close()


class _AsyncMessageStreamManager:
    def __init__(self, native: Any, body: str, read: Optional[Callable[[str], Any]]) -> None:
        self._native = native
        self._body = body
        self._read = read
        self._stream: Optional[AsyncMessageStream] = None

    async def __aenter__(self) -> AsyncMessageStream:
        with _anthropic_errors():
            native = await _in_thread(self._native.stream, "messages.stream", self._body)
        self._stream = AsyncMessageStream(_AsyncEvents(native, MessageStreamEvent), self._read)
        return self._stream

    async def __aexit__(self, *exc: Any) -> None:
        if self._stream is not None:
            await self._stream.close()


def _body(params: Dict[str, Any]) -> Tuple[str, Optional[Callable[[str], Any]]]:
    """The JSON body, and how to read a text block back when ``output_format`` (a type: a
    pydantic model, a dataclass...) asked for JSON of its schema, as the anthropic client
    merges it into ``output_config.format``. Errors in Anthropic's terms."""
    params.pop("stream", None)
    params.pop("betas", None)  # the beta header of the anthropic client: nothing to turn on here
    with _anthropic_errors():
        read = None
        output_format = params.pop("output_format", None)
        if output_format is not None and not _arguments._sentinel(output_format):
            if not isinstance(output_format, type):
                raise _exceptions._invalid_argument(
                    "output_format", "`output_format` must be a type (a pydantic model, a "
                    f"dataclass, a TypedDict...), not {type(output_format).__name__}")
            fmt, read = _structured.response_format_of(output_format)
            config = params.get("output_config")
            config = dict(config) if isinstance(config, dict) else {}
            config["format"] = {"type": "json_schema", "schema": fmt["json_schema"]["schema"]}
            params["output_config"] = config
        return _arguments.body(params), read


def _parsed(message: Message, read: Optional[Callable[[str], Any]]) -> Message:
    if read is not None:
        for block in message.content:
            if block.type == "text":
                block._parsed = read(block.text or "")
    return message


def _raising_in_anthropic_terms(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a native call) whose errors are raised in Anthropic's terms."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with _anthropic_errors():
            return function(*args, **kwargs)

    return call


def _messages_create(
    self: _Resource[Any], *, stream: bool = False, **params: Any
) -> Union[_Call[Message, Message], _Call[Stream[MessageStreamEvent], AsyncStream[MessageStreamEvent]]]:
    """``model``, ``max_tokens``, ``messages`` (text, ``tool_use`` and ``tool_result``
    blocks), ``system``, ``tools``, ``tool_choice``, ``stop_sequences``, ``temperature``,
    ``top_p``, ``top_k``, ``metadata``, ``output_config``; ``stream=True`` gives the raw
    events (see docs/anthropic.md)."""
    with _anthropic_errors():
        streamed = _arguments.stream_flag(stream)
    body, read = _body(params)
    if streamed:
        opened = _raising_in_anthropic_terms(self._native.stream)
        return _streamed(MessageStreamEvent, opened, "messages.stream", body, kinds=(_Events, _AsyncEvents))
    message = lambda text: _parsed(Message.construct(json.loads(text)), read)  # noqa: E731
    return _whole(message, _raising_in_anthropic_terms(self._native.call), "messages.create", body)


class Messages(_Resource[M]):
    create = _streaming[Message, MessageStreamEvent](_messages_create)

    @_method
    def parse(self, /, **params: Any) -> _Call[Message, Message]:
        """``create`` with ``output_format`` (a type): the reply is JSON of its schema, and
        ``parsed_output`` (of the message and of each text block) is it validated into it."""
        if params.get("stream"):
            raise TypeError("parse() does not stream; use stream(output_format=...)")
        return cast(_Call[Message, Message], _messages_create(self, **params))

    @_direct
    def stream(self, /, **params: Any) -> _Call[_MessageStreamManager, _AsyncMessageStreamManager]:
        """``create`` streamed, as a context manager giving a `MessageStream` (in
        AsyncAnthropic, ``async with`` giving an `AsyncMessageStream`): the stream starts on
        entry."""
        native, (body, read) = self._native, _body(params)
        return _either(
            lambda: _MessageStreamManager(native, body, read),
            lambda: _AsyncMessageStreamManager(native, body, read),
        )

    @_method
    def count_tokens(self, /, **params: Any) -> _Call[MessageTokensCount, MessageTokensCount]:
        """How many input tokens ``create(**params)`` would take, read by the model itself."""
        body, _ = _body(params)
        read = lambda text: MessageTokensCount.construct(json.loads(text))  # noqa: E731
        return _whole(read, _raising_in_anthropic_terms(self._native.call), "messages.count_tokens", body)


class _Client(_Clients[M]):
    """What ``Anthropic`` and ``AsyncAnthropic`` share, in their mode."""

    def _open(self, native: Any) -> None:
        self.messages = Messages(native, self._mode)


class Anthropic(_Client[Sync], _Closes):
    """Anthropic's Messages API on the models of this process (``ingle.OpenAI``'s config and
    predictors). The anthropic client's connection arguments (``api_key``, ``base_url``,
    ``timeout``, ...) are accepted and ignored, so existing code runs unchanged."""

    _MODE = Sync


class AsyncAnthropic(_Client[Async], _ClosesAsync):
    """`Anthropic` for asyncio: the same methods, awaited, the engine in worker threads."""

    _MODE = Async
