"""Muna's names for ingle's annotations and chat types, so that a predictor written for Muna
needs only its import lines changed:

    from muna.beta import Annotations              →  from ingle.beta import Annotations
    from muna.beta.openai import Message, ...      →  from ingle.beta.openai import Message, ...

``Annotations.X`` gives the ingle annotation of the same meaning (``Parameter.*``), Muna's
newer ones included: ``ChatImages``, ``ChatAudios``, ``ChatTools`` and ``ReasoningEffort``.
"""

from ._annotations import Annotations
from . import openai

__all__ = ["Annotations", "openai"]
