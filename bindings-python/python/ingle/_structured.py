"""``chat.completions.parse``: a pydantic model (or any type pydantic can validate) as the
``response_format``, as the openai client takes it; the reply's content read back into it."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from ._arguments import NOT_GIVEN, _sentinel
from .types import ParsedChatCompletion


def response_format_of(
    response_format: Any,
) -> Tuple[Any, Optional[Callable[[str], Any]]]:
    """The JSON ``response_format`` to send, and how to read the content back (None: leave
    ``parsed`` empty, as openai does for a dict ``response_format``)."""
    if _sentinel(response_format) or response_format is None or isinstance(response_format, dict):
        return response_format, None
    if not isinstance(response_format, type):
        raise TypeError(
            "response_format must be a type (a pydantic model, a dataclass, a TypedDict...) "
            f"or a dict, not {type(response_format).__name__}"
        )
    try:
        # The openai client's own conversion (strict schema, $defs kept), when it is installed.
        from openai.lib._parsing._completions import type_to_response_format_param

        # Typed `ResponseFormatParam | Omit` by openai; given a type, it is never Omit.
        fmt = dict(type_to_response_format_param(response_format))  # type: ignore[arg-type]
    except ImportError:
        fmt = {
            "type": "json_schema",
            "json_schema": {
                "name": response_format.__name__,
                "schema": _adapter(response_format).json_schema(),
                "strict": True,
            },
        }
    adapter = _adapter(response_format)
    return fmt, adapter.validate_json


def _adapter(kind: type) -> Any:
    try:
        import pydantic
    except ImportError as e:  # pragma: no cover - openai depends on pydantic
        raise ImportError("chat.completions.parse with a type needs pydantic (pip install pydantic)") from e
    return pydantic.TypeAdapter(kind)


def parsed(completion: Dict[str, Any], read: Optional[Callable[[str], Any]]) -> ParsedChatCompletion:
    """The completion with ``message.parsed`` set on each choice."""
    for choice in completion.get("choices", []):
        message = choice.get("message", {})
        content = message.get("content")
        message["parsed"] = read(content) if read is not None and content is not None else None
    return ParsedChatCompletion.construct(completion)


__all__ = ["response_format_of", "parsed"]
