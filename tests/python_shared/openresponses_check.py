"""Checks Responses objects and stream events against the OpenResponses specification, through the
Pydantic models generated from its OpenAPI document (`openresponses-types`, pinned): what its
compliance suite, which Ollama, LM Studio and vLLM run, holds a server to.

OpenResponses and OpenAI name two events differently: ingle sends OpenAI's
`response.reasoning_text.delta` / `.done` (what the openai SDKs parse), where the specification
has `response.reasoning.delta` / `.done` with the same fields, so those are checked against the
specification's classes of the same shape."""

from __future__ import annotations

import enum
import json
import typing
import urllib.request
from typing import Any, Dict, Iterable, List, Optional, Type

import openresponses_types as spec
import pydantic

# OpenAI's event names → the specification's for the same event.
OPENAI_NAMES = {
    "response.reasoning_text.delta": "response.reasoning.delta",
    "response.reasoning_text.done": "response.reasoning.done",
}


def _event_classes() -> Dict[str, Type[pydantic.BaseModel]]:
    """Each streaming event's `type` value → its class."""
    classes: Dict[str, Type[pydantic.BaseModel]] = {}
    for name in dir(spec):
        cls = getattr(spec, name)
        if not (isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)
                and name.endswith("StreamingEvent")):
            continue
        annotation = cls.model_fields["type"].annotation
        for arg in typing.get_args(annotation) or (annotation,):
            if isinstance(arg, type) and issubclass(arg, enum.Enum):
                for member in arg:
                    classes[member.value] = cls
            elif isinstance(arg, str):
                classes[arg] = cls
    return classes


EVENTS = _event_classes()


def check_response(response: Dict[str, Any]) -> spec.ResponseResource:
    """Validates one Response object (a dict as it came over the wire)."""
    return spec.ResponseResource.model_validate(response)


def check_events(events: Iterable[Dict[str, Any]]) -> List[str]:
    """Validates each event against the specification's class for its type; returns the types."""
    seen = []
    for event in events:
        kind = OPENAI_NAMES.get(event["type"], event["type"])
        assert kind in EVENTS, f"the specification has no event {event['type']!r}"
        EVENTS[kind].model_validate({**event, "type": kind})
        seen.append(event["type"])
    return seen


def sse_events(lines: Iterable[str]) -> List[Dict[str, Any]]:
    """The JSON events of a server-sent event stream's lines."""
    events = []
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            events.append(json.loads(line[len("data: "):]))
    return events


def http(base_url: str, method: str, path: str, body: Optional[Dict[str, Any]] = None,
         key: Optional[str] = None) -> List[str]:
    """The lines of a 200 answer, raw as the server sent them (no SDK in between)."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(base_url + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=300) as reply:
        assert reply.status == 200
        return reply.read().decode().splitlines()
