"""FHIR R4 resources in JSON, XML and Thoth's binary (Protocol Buffers) encoding, lossless in every direction.

>>> from thoth import fhir
>>> pb = fhir.convert('{"resourceType":"Patient","id":"p1"}', dst="pb")
>>> fhir.loads(pb)
{'resourceType': 'Patient', 'id': 'p1'}
"""

from ._native import fhir as _native

NdjsonIter = _native.NdjsonIter
convert = _native.convert
loads = _native.loads
dumps = _native.dumps
detect_format = _native.detect_format
iter_ndjson = _native.iter_ndjson
PROTO_SCHEMA = _native.PROTO_SCHEMA

__all__ = ["NdjsonIter", "convert", "loads", "dumps", "detect_format", "iter_ndjson", "PROTO_SCHEMA"]
