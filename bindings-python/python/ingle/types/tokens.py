"""``tokenize`` and ``detokenize``'s objects: a text model's own tokenizer, as llama.cpp's server
has it."""

from __future__ import annotations

from typing import List, Union

from . import BaseModel


class TokenPiece(BaseModel):
    """A token with its piece (``tokenize(with_pieces=True)``): ``piece`` is its text, or its
    bytes as a list of ints where they are not UTF-8 on their own."""

    id: int
    piece: Union[str, List[int]]


class TokenizeResponse(BaseModel):
    """What ``client.tokenize`` returns (llama.cpp server's ``/tokenize``): the token ids."""

    tokens: List[int]


class TokenizePiecesResponse(BaseModel):
    """What ``client.tokenize(with_pieces=True)`` returns: a ``TokenPiece`` per token."""

    tokens: List[TokenPiece]
    _nested = {"tokens": TokenPiece}


class DetokenizeResponse(BaseModel):
    """What ``client.detokenize`` returns: the tokens' text."""

    content: str
