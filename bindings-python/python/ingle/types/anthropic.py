"""Anthropic's Messages API objects, with the attribute names and nesting of the ``anthropic``
package's types (``anthropic.types.Message`` ...), for ``ingle.Anthropic``.

As ``ingle.types``, they are plain classes: ``model_dump()`` gives the Anthropic JSON, so
``anthropic.types.Message.model_validate(m.model_dump())`` works when you need the real one.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import BaseModel

__all__ = [
    "Usage",
    "ContentBlock",
    "Message",
    "MessageTokensCount",
    "MessageDelta",
    "MessageStreamEvent",
]


class Usage(BaseModel):
    """``input_tokens`` leaves out the prompt tokens read from the prompt cache, which are
    ``cache_read_input_tokens`` (their sum is the prompt), as Anthropic counts them."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: Optional[int]
    cache_creation_input_tokens: Optional[int]


class ContentBlock(BaseModel):
    """A block of a message's ``content``: ``text`` (``text``) or ``tool_use`` (``id``,
    ``name``, ``input`` as a dict)."""

    type: str
    text: Optional[str]
    citations: Optional[List[Any]]
    id: Optional[str]
    name: Optional[str]
    input: Optional[Dict[str, Any]]
    # Set by `output_format`'s reader on a text block; unset otherwise (not a field).
    _parsed: Any

    @property
    def parsed_output(self) -> Any:
        """A text block's JSON read into ``output_format`` (None without one)."""
        return getattr(self, "_parsed", None)


# Anthropic's names for the two kinds of block.
TextBlock = ContentBlock
ToolUseBlock = ContentBlock


class Message(BaseModel):
    """``type: "message"``, ``role: "assistant"``: the ``content`` blocks, ``stop_reason``
    (``end_turn``, ``max_tokens``, ``stop_sequence``, ``tool_use``) and ``usage``."""

    id: str
    type: str
    role: str
    model: str
    content: List[ContentBlock]
    stop_reason: Optional[str]
    stop_sequence: Optional[str]
    usage: Usage
    _nested = {"content": ContentBlock, "usage": Usage}

    @property
    def parsed_output(self) -> Any:
        """The first text block's ``parsed_output`` (with ``output_format``; else None)."""
        return next((b.parsed_output for b in self.content if b.parsed_output is not None), None)


class MessageTokensCount(BaseModel):
    """``messages.count_tokens(...)``."""

    input_tokens: int


class MessageDelta(BaseModel):
    """The ``delta`` of a stream event: ``text_delta`` (``text``), ``input_json_delta``
    (``partial_json``), or a ``message_delta``'s ``stop_reason`` and ``stop_sequence``."""

    type: Optional[str]
    text: Optional[str]
    partial_json: Optional[str]
    stop_reason: Optional[str]
    stop_sequence: Optional[str]


class MessageStreamEvent(BaseModel):
    """One event of a streamed message. ``type`` says which: ``message_start`` (``message``),
    ``content_block_start`` (``index``, ``content_block``), ``content_block_delta`` (``index``,
    ``delta``), ``content_block_stop`` (``index``), ``message_delta`` (``delta``, ``usage``),
    ``message_stop``; ``ping``. The ``messages.stream(...)`` helper adds, as the anthropic
    client's does, ``text`` (``text``, ``snapshot``) and ``input_json`` (``partial_json``,
    ``snapshot``) events, and gives ``content_block_stop`` its ``content_block`` and
    ``message_stop`` its ``message``."""

    type: str
    index: Optional[int]
    message: Optional[Message]
    content_block: Optional[ContentBlock]
    delta: Optional[MessageDelta]
    usage: Optional[Usage]
    _nested = {
        "message": Message,
        "content_block": ContentBlock,
        "delta": MessageDelta,
        "usage": Usage,
    }


RawMessageStreamEvent = MessageStreamEvent
