"""Thoth from Python: HL7 v2 messages, FHIR R4 formats and terminology (SNOMED CT with ECL, LOINC, ...) at
native speed.

- ``thoth.hl7``: ``parse(bytes | str)`` → ``Message`` (``get("PID-5-1")``, ``segments("OBX")``, ``to_json()``,
  ``encode()``, ``ack()``, ``validate()``, ``to_fhir()``); ``iter_file(path)`` streams a file of messages.
- ``thoth.fhir``: ``convert(data, src="json", dst="pb")``, ``loads(data)`` → dict, ``dumps(dict, dst)``,
  ``iter_ndjson(path)``.
- ``thoth.terminology``: ``Terminology.open(path)`` over a data directory made by ``thoth import``; ``lookup``,
  ``validate_code``, ``subsumes``, ``search``, ``expand_ecl``, ``translate``.

Errors are ``thoth.ThothError`` (a ``ValueError``) with the messages of the ``thoth`` command line, which
``python -m thoth`` runs.
"""

from ._native import ThothError, __version__
from . import fhir, hl7, terminology

__all__ = ["ThothError", "__version__", "fhir", "hl7", "terminology"]
