"""``client.responses``: OpenAI's Responses API on the chat models, in this process: create
(whole or ``stream=True``), the ``stream(...)`` helper, ``parse(text_format=...)``, retrieve,
delete, ``input_items.list`` and ``input_tokens.count``. Stored responses are kept in SQLite
(the config's ``[responses]``), so a conversation goes on by id in this process or the next."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterator, Literal, Optional, Type, Union, overload

from . import _arguments, _exceptions, _structured
from ._arguments import NOT_GIVEN
from ._base import (
    _Awaited,
    M,
    Async,
    AsyncStream,
    Stream,
    Sync,
    _Call,
    _direct,
    _either,
    _in_thread,
    _json,
    _method,
    _Resource,
    _streamed,
    _streaming,
    _whole,
)
from .types import InputTokenCountResponse, Response, ResponseInputItemList, ResponseStreamEvent


def _text_format(text_format: Any, params: Dict[str, Any]) -> Optional[Callable[[str], Any]]:
    """``parse``'s ``text_format`` (a pydantic model, a dataclass...) as the request's
    ``text.format`` (a strict JSON schema); returns how to read the output text back."""
    fmt, read = _structured.response_format_of(text_format)
    if _arguments._sentinel(fmt) or fmt is None:
        return None
    schema = fmt.get("json_schema", {}) if isinstance(fmt, dict) else {}
    text = dict(params.get("text") or {})
    text["format"] = {
        "type": "json_schema",
        "name": schema.get("name", "response"),
        "schema": schema.get("schema"),
        "strict": schema.get("strict", True),
    }
    params["text"] = text
    return read


def _parsed(data: Dict[str, Any], read: Optional[Callable[[str], Any]]) -> Response:
    response = Response.construct(data)
    text = response.output_text
    response.output_parsed = read(text) if read is not None and text else None  # type: ignore[attr-defined]
    return response


def _page(response_id: Any, after: Any, limit: Any, order: Any) -> str:
    given = _arguments._given
    if given(limit) and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise _exceptions._invalid_argument("limit", f"`limit` must be an integer, not {type(limit).__name__}")
    return _arguments.named(
        response_id=_arguments.text("response_id", response_id),
        after=_arguments.text("after", after) if given(after) else None,
        limit=limit if given(limit) else None,
        order=_arguments.text("order", order) if given(order) else None,
    )


def _final_or_raise(final: Optional[Response], failed: Optional[Response]) -> Response:
    """The final response of a stream; a failed one raises the error ``create()`` raises."""
    if failed is not None:
        error = failed.error
        code = error.code if error is not None else "server_error"
        message = error.message if error is not None else "The response failed"
        kind = "invalid_request_error" if code == "invalid_prompt" else "server_error"
        body = {"message": message, "type": kind, "param": None, "code": code}
        if code == "invalid_prompt":
            raise _exceptions.BadRequestError(message, status_code=400, body=body, code=code, type=kind)
        raise _exceptions.InternalServerError(message, status_code=500, body=body, code=code, type=kind)
    if final is None:
        raise RuntimeError("the stream ended without its final response")
    return final


class ResponseStream:
    """What ``responses.stream(...)`` gives, as the openai client's: iterate the events (in a
    ``with`` block), then ``get_final_response()``. Leaving early stops generation."""

    def __init__(self, events: Stream[ResponseStreamEvent]) -> None:
        self._events = events
        self._final: Optional[Response] = None
        self._failed: Optional[Response] = None

    def __iter__(self) -> Iterator[ResponseStreamEvent]:
        for event in self._events:
            if event.type in ("response.completed", "response.incomplete"):
                self._final = event.response
            elif event.type == "response.failed":
                self._failed = event.response
            yield event

    def until_done(self) -> "ResponseStream":
        for _ in self:
            pass
        return self

    def get_final_response(self) -> Response:
        """The whole response; a failed one raises what ``create()`` would have."""
        if self._final is None and self._failed is None:
            self.until_done()
        return _final_or_raise(self._final, self._failed)

    def close(self) -> None:
        self._events.close()

    def __enter__(self) -> "ResponseStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncResponseStream:
    """The async twin of `ResponseStream`: ``async with``, ``async for``, then
    ``await get_final_response()``."""

    def __init__(self, events: AsyncStream[ResponseStreamEvent]) -> None:
        self._events = events
        self._final: Optional[Response] = None
        self._failed: Optional[Response] = None

    async def _iterate(self) -> AsyncIterator[ResponseStreamEvent]:
        async for event in self._events:
            if event.type in ("response.completed", "response.incomplete"):
                self._final = event.response
            elif event.type == "response.failed":
                self._failed = event.response
            yield event

    def __aiter__(self) -> AsyncIterator[ResponseStreamEvent]:
        return self._iterate()

    async def until_done(self) -> "AsyncResponseStream":
        async for _ in self:
            pass
        return self

    async def get_final_response(self) -> Response:
        if self._final is None and self._failed is None:
            await self.until_done()
        return _final_or_raise(self._final, self._failed)

    async def close(self) -> None:
        await self._events.close()

    async def __aenter__(self) -> "AsyncResponseStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class InputItems(_Resource[M]):
    @_method
    def list(
        self, response_id: str, *, after: Any = NOT_GIVEN, limit: Any = NOT_GIVEN, order: Any = NOT_GIVEN
    ) -> _Call[ResponseInputItemList, ResponseInputItemList]:
        """A page of a stored response's input items: ``order`` ``desc`` (default) or ``asc``,
        ``limit`` 1 to 100 (default 20), after the item ``after``."""
        body = _page(response_id, after, limit, order)
        read = _json(ResponseInputItemList.construct)
        return _whole(read, self._native.call, "responses.input_items.list", body, cancellable=False)


class InputTokens(_Resource[M]):
    @_method
    def count(self, /, **params: Any) -> _Call[InputTokenCountResponse, InputTokenCountResponse]:
        """How many input tokens ``create(**params)`` would take (instructions, tools and the
        conversation of ``previous_response_id`` included), read by the model itself."""
        body = _arguments.body(params)
        return _whole(_json(InputTokenCountResponse.construct), self._native.call, "responses.input_tokens", body)


def _responses_create(
    self: _Resource[Any], *, stream: bool = False, **params: Any
) -> Union[_Call[Response, Response], _Call[Stream[ResponseStreamEvent], AsyncStream[ResponseStreamEvent]]]:
    """``model``, ``input`` (a string or items), ``instructions``, ``tools``,
    ``previous_response_id``, ... as OpenAI's; ``stream=True`` gives the events."""
    body = _arguments.body(params)
    if _arguments.stream_flag(stream):
        return _streamed(ResponseStreamEvent, self._native.stream, "responses.stream", body)
    return _whole(_json(Response.construct), self._native.call, "responses.create", body)


class Responses(_Resource[M]):
    def __init__(self, native: Any, mode: Type[M]) -> None:
        super().__init__(native, mode)
        self.input_items = InputItems(native, mode)
        self.input_tokens = InputTokens(native, mode)

    create = _streaming[Response, ResponseStreamEvent](_responses_create)

    @_direct
    def stream(self, /, **params: Any) -> _Call[ResponseStream, "_AsyncStreamStart"]:
        """``create(stream=True)`` as a context manager with ``get_final_response()``: in
        OpenAI the stream starts here, in AsyncOpenAI on ``async with``."""
        params.pop("stream", None)
        native, body = self._native, _arguments.body(params)
        opened = lambda: ResponseStream(Stream(native.stream("responses.stream", body), ResponseStreamEvent))  # noqa: E731
        return _either(opened, lambda: _AsyncStreamStart(native, body))

    @_method
    def parse(self, /, *, text_format: Any = NOT_GIVEN, **params: Any) -> _Call[Response, Response]:
        """``create`` whose output follows ``text_format``'s JSON schema; ``output_parsed`` is
        the output text validated into it."""
        if params.get("stream"):
            raise TypeError("parse() does not stream; use create(stream=True)")
        read = _text_format(text_format, params)
        parsed = lambda text: _parsed(json.loads(text), read)  # noqa: E731
        return _whole(parsed, self._native.call, "responses.create", _arguments.body(params))

    @_method
    def retrieve(self, response_id: str) -> _Call[Response, Response]:
        body = _arguments.named(response_id=_arguments.text("response_id", response_id))
        return _whole(_json(Response.construct), self._native.call, "responses.retrieve", body, cancellable=False)

    @_method
    def delete(self, response_id: str) -> _Call[None, None]:
        """Forgets a stored response (as openai's, returns nothing; an unknown id raises
        NotFoundError)."""
        body = _arguments.named(response_id=_arguments.text("response_id", response_id))
        return _whole(lambda _: None, self._native.call, "responses.delete", body, cancellable=False)


class _AsyncStreamStart:
    """``async with client.responses.stream(...) as stream``: starts the stream on entry."""

    def __init__(self, native: Any, body: str) -> None:
        self._native = native
        self._body = body
        self._stream: Optional[AsyncResponseStream] = None

    async def __aenter__(self) -> AsyncResponseStream:
        native = await _in_thread(self._native.stream, "responses.stream", self._body)
        self._stream = AsyncResponseStream(AsyncStream(native, ResponseStreamEvent))
        return self._stream

    async def __aexit__(self, *exc: Any) -> None:
        if self._stream is not None:
            await self._stream.close()
