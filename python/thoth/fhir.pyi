from os import PathLike
from typing import Any, Iterator, Optional, Union

_Data = Union[bytes, bytearray, memoryview, str]

PROTO_SCHEMA: str

def convert(
    data: _Data, src: Optional[str] = None, dst: str = "json", pretty: bool = False, lenient: bool = False
) -> bytes:
    """Converts a resource between "json", "xml" and "pb" (source detected when None)."""

def loads(data: _Data, src: Optional[str] = None, lenient: bool = False) -> dict[str, Any]:
    """Reads and validates a resource in any format; returns it as a dict."""

def dumps(resource: Union[dict[str, Any], _Data], dst: str = "json", pretty: bool = False) -> bytes:
    """Validates a resource (a dict or FHIR JSON) and writes it in ``dst``."""

def detect_format(data: _Data) -> str:
    """"json", "xml" or "pb"."""

class NdjsonIter(Iterator[dict[str, Any]]):
    def __iter__(self) -> NdjsonIter: ...
    def __next__(self) -> dict[str, Any]: ...

def iter_ndjson(path: Union[str, PathLike[str]], lenient: bool = False) -> NdjsonIter:
    """The resources of an NDJSON file, one dict per line, read line by line."""
