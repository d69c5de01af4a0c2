"""Exceptions named like the ``openai`` package's, so ``except openai.BadRequestError``-style code
ports by changing the import."""

from __future__ import annotations

from typing import Any, Dict, Optional

__all__ = [
    "OpenAIError",
    "AnthropicError",
    "APIError",
    "APIStatusError",
    "BadRequestError",
    "NotFoundError",
    "InternalServerError",
    "StreamAlreadyConsumed",
]


class OpenAIError(Exception):
    """The base of every ingle error."""


# The anthropic package's name for the same base (``ingle.Anthropic``'s errors).
AnthropicError = OpenAIError


class APIError(OpenAIError):
    """An error reported by the engine, with the fields of the OpenAI error object."""

    message: str
    body: Optional[Dict[str, Any]]
    """The OpenAI error object: ``{"message", "type", "param", "code"}``."""
    code: Optional[str]
    param: Optional[str]
    """The request parameter at fault, e.g. ``"messages[0].role"``."""
    type: Optional[str]

    def __init__(
        self,
        message: str,
        *,
        body: Optional[Dict[str, Any]] = None,
        code: Optional[str] = None,
        param: Optional[str] = None,
        type: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.body = body
        self.code = code
        self.param = param
        self.type = type


class APIStatusError(APIError):
    """An error with the HTTP status the OpenAI API would answer with."""

    status_code: int

    def __init__(self, message: str, *, status_code: int, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.status_code = status_code


class BadRequestError(APIStatusError):
    """The request is invalid (400): a wrong field, a value out of range, a prompt too long."""


class NotFoundError(APIStatusError):
    """The model does not exist (404)."""


class InternalServerError(APIStatusError):
    """The model failed to load or run, or ingle hit a bug (500)."""


class StreamAlreadyConsumed(OpenAIError):
    """A streamed response's content was asked for after it was iterated (``iter_bytes()``
    then ``read()``, or a second ``iter_bytes()``): a stream is read once. Call ``read()``
    first to keep the content, as with ``openai``."""

    def __init__(self) -> None:
        super().__init__(
            "Attempted to read or stream content, but the content has already been streamed. "
            "Call `.read()` before iterating to keep the whole content."
        )


_CLASSES = {
    "invalid_request": BadRequestError,
    "context_length_exceeded": BadRequestError,
    "not_found": NotFoundError,
    "model": InternalServerError,
    "internal": InternalServerError,
    # Only seen if a cancelled call's result is awaited anyway: Ctrl-C raises KeyboardInterrupt
    # and a cancelled asyncio task CancelledError, as usual.
    "cancelled": APIStatusError,
}


def _from_native(
    kind: str,
    message: str,
    type: str,
    param: Optional[str],
    code: Optional[str],
    status_code: int,
) -> APIStatusError:
    """Called by the native module to build the exception for a core error."""
    cls = _CLASSES.get(kind, InternalServerError)
    body = {"message": message, "type": type, "param": param, "code": code}
    return cls(message, status_code=status_code, body=body, code=code, param=param, type=type)


def _invalid_argument(param: Optional[str], message: str) -> BadRequestError:
    """A ``BadRequestError`` for an argument refused before it reaches the engine, with the
    fields the engine's own would have."""
    type = "invalid_request_error"
    message = _bounded(message, 2048)
    param = None if param is None else _bounded(param, 256)
    body = {"message": message, "type": type, "param": param, "code": None}
    return BadRequestError(message, status_code=400, body=body, code=None, param=param, type=type)


def _bounded(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8, marked as cut (as the engine does)."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= max_bytes:
        return text
    kept = encoded[: max_bytes - 32].decode("utf-8", "ignore")
    return f"{kept}…({len(encoded) - len(kept.encode('utf-8', 'surrogatepass'))} more bytes)"
