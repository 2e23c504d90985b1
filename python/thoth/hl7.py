"""HL7 v2 messages: parse, read values by path, encode byte for byte, acknowledge, validate, convert to FHIR.

>>> from thoth import hl7
>>> msg = hl7.parse(b"MSH|^~\\\\&|HIS|H|RIS|R|20240315||ADT^A01^ADT_A01|M1|P|2.5\\rPID|1||42^^^H^MR||DOE^JOHN\\r")
>>> msg.get("PID-5-1")
'DOE'
>>> msg.field_name("PID-5")
'Patient Name'
"""

from ._native import hl7 as _native

Message = _native.Message
Segment = _native.Segment
MessageIter = _native.MessageIter
parse = _native.parse
iter_messages = _native.iter_messages
iter_file = _native.iter_file
field_name = _native.field_name

__all__ = ["Message", "Segment", "MessageIter", "parse", "iter_messages", "iter_file", "field_name"]
