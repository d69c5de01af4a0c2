"""Muna's names for ingle's annotations and chat types, so that a predictor written for Muna
needs only its import lines changed:

    from muna.beta import Annotations              →  from ingle.beta import Annotations
    from muna.beta.openai import Message, ...      →  from ingle.beta.openai import Message, ...

``Annotations.X`` gives the ingle annotation of the same meaning (``Parameter.*``); an
annotation ingle has no equivalent for (``ReasoningEffort``) fails when the predictor is
declared, naming the parameter, rather than doing nothing.
"""

from ._annotations import Annotations
from . import openai

__all__ = ["Annotations", "openai"]
