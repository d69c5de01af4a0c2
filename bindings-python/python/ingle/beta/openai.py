"""``ingle.beta.openai``: Muna's names for the chat types (``muna.beta.openai``), each ingle's
own type of the same shape.

``Message`` is ``ingle.types.ChatCompletionMessage`` (``role``, ``content``, ... as attributes):
a parameter typed ``list[Message]`` is the chat messages, each given to the function as one.
``ChatCompletionChunk`` is ``ingle.types.ChatCompletionChunk``, which a chat predictor may
yield (as it may yield ``str`` or the chunk's dict).
"""

from ..types import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage as Message,
    ChoiceDelta as DeltaMessage,
    ChunkChoice as StreamChoice,
    Choice,
    CreateEmbeddingResponse as EmbeddingCreateResponse,
    Embedding,
)
from ._annotations import Annotations

__all__ = [
    "Annotations",
    "ChatCompletion",
    "ChatCompletionChunk",
    "Choice",
    "DeltaMessage",
    "Embedding",
    "EmbeddingCreateResponse",
    "Message",
    "StreamChoice",
]
