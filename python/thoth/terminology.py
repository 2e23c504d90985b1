"""Terminology over a data directory made by ``thoth import``: the answers of Thoth's HTTP API, as dicts.

>>> from thoth.terminology import Terminology
>>> tx = Terminology.open("~/.local/share/thoth")          # doctest: +SKIP
>>> tx.subsumes("64572001", "24700007")                     # doctest: +SKIP
'subsumes'
"""

from ._native import terminology as _native

Terminology = _native.Terminology
SNOMED = _native.SNOMED

__all__ = ["Terminology", "SNOMED"]
