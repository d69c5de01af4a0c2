"""``images.generate``'s objects, with the attribute names of the ``openai`` package's
(``ImagesResponse``, ``Image``, ``ImageGenStreamEvent``)."""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional

from . import BaseModel

__all__ = ["Image", "ImagesResponse", "ImageGenStreamEvent"]


class Image(BaseModel):
    """One image: ``b64_json``, the encoded file (PNG, JPEG or WebP) in base64."""

    b64_json: Optional[str]
    url: Optional[str]
    revised_prompt: Optional[str]

    def to_bytes(self) -> bytes:
        """The encoded file itself (ingle's helper)."""
        return base64.b64decode(self.b64_json or "")


class ImagesResponse(BaseModel):
    """``created``, ``data`` (the images), ``background``, ``output_format``, ``quality``,
    ``size`` (``"WIDTHxHEIGHT"``)."""

    created: int
    data: List[Image]
    background: Optional[str]
    output_format: Optional[str]
    quality: Optional[str]
    size: Optional[str]
    usage: Optional[Dict[str, Any]]
    _nested = {"data": Image}


class ImageGenStreamEvent(BaseModel):
    """``image_generation.partial_image`` (``partial_image_index``) or
    ``image_generation.completed`` (``usage``): ``b64_json``, ``background``, ``created_at``,
    ``output_format``, ``quality``, ``size``."""

    type: str
    b64_json: str
    background: str
    created_at: int
    output_format: str
    quality: str
    size: str
    partial_image_index: Optional[int]
    usage: Optional[Dict[str, Any]]
