from os import PathLike
from typing import Any, Iterator, Optional, Union

_Data = Union[bytes, bytearray, memoryview, str]

class Message:
    """A parsed HL7 v2 message (immutable). Values are decoded when read."""

    def __init__(self, data: _Data) -> None: ...
    def get(self, path: str) -> Optional[str]:
        """The decoded text at ``path`` ("PID-5-1", "OBX[2]-5", a group path), or None."""
    def raw(self, path: str) -> Optional[bytes]:
        """The raw (escaped) bytes at ``path``, or None."""
    def __getitem__(self, path: str) -> str: ...
    def field_name(self, path: str) -> Optional[str]:
        """The name of the element at ``path`` in the message's version ("PID-5" -> "Patient Name")."""
    def segments(self, id: Optional[str] = None) -> list[Segment]:
        """The segments, in order; only those with identifier ``id`` when given."""
    def __len__(self) -> int: ...
    def encode(self) -> bytes:
        """The message's bytes, unchanged."""
    def __bytes__(self) -> bytes: ...
    def to_json(self, names: bool = False) -> dict[str, Any]:
        """The JSON view (as ``thoth hl7 json`` prints it) as a dict."""
    @property
    def diagnostics(self) -> list[dict[str, Any]]:
        """What the parser noticed: {"severity", "message", "offset", "segment", "field"}."""
    def ack(
        self,
        code: str = "AA",
        text: Optional[str] = None,
        control_id: Optional[str] = None,
        timestamp: Optional[str] = None,
    ) -> bytes:
        """An acknowledgement of this message."""
    def validate(self, strict: bool = False, version: Optional[str] = None) -> list[dict[str, str]]:
        """Issues against the version's definitions: {"severity", "code", "rule", "path", "message"}."""
    def to_fhir(self, bundle: str = "message") -> dict[str, Any]:
        """The FHIR R4 Bundle by the HL7 v2-to-FHIR guide, as a dict."""
    @property
    def message_type(self) -> Optional[str]:
        """MSH-9 as written."""
    @property
    def control_id(self) -> Optional[str]:
        """MSH-10."""
    @property
    def version(self) -> Optional[str]:
        """MSH-12."""

class Segment:
    """One segment of a Message; ``seg[n]`` is field n (1-based)."""

    @property
    def id(self) -> str: ...
    @property
    def index(self) -> int: ...
    def field(self, n: int) -> Optional[str]: ...
    def fields(self) -> list[str]: ...
    def __getitem__(self, n: int) -> str: ...
    def __len__(self) -> int: ...
    def raw(self) -> bytes: ...

class MessageIter(Iterator[Message]):
    def __iter__(self) -> MessageIter: ...
    def __next__(self) -> Message: ...

def parse(data: _Data, strict: bool = False) -> Message:
    """Parses one message; never fails unless ``strict``."""

def iter_messages(data: _Data) -> MessageIter:
    """The messages of a buffer holding many messages or a batch file."""

def iter_file(path: Union[str, PathLike[str]]) -> MessageIter:
    """The messages of a file, read block by block (bounded memory)."""

def field_name(path: str, version: str = "2.5.1") -> Optional[str]:
    """The name of the element at ``path`` in HL7 v2 ``version``."""
