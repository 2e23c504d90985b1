from os import PathLike
from typing import Any, Optional, Union

SNOMED: str

class Terminology:
    """The read-only terminology of a data directory made by ``thoth import``; thread-safe."""

    @staticmethod
    def open(path: Union[str, PathLike[str]], max_expansion: int = 1000) -> Terminology: ...
    def lookup(self, code: str, system: str = ...) -> dict[str, Any]:
        """CodeSystem/$lookup: the FHIR Parameters as a dict."""
    def concept(self, code: str) -> Optional[dict[str, Any]]:
        """A SNOMED CT concept from the store: {"code", "display", "active", "fsn"}, or None."""
    def validate_code(
        self, code: str, system: str = ..., url: Optional[str] = None, display: Optional[str] = None
    ) -> dict[str, Any]:
        """$validate-code in the code system, or in the value set ``url``: the Parameters as a dict."""
    def subsumes(self, code_a: str, code_b: str, system: str = ...) -> str:
        """"equivalent", "subsumes", "subsumed-by" or "not-subsumed"."""
    def translate(self, code: str, system: str, url: Optional[str] = None) -> dict[str, Any]:
        """ConceptMap/$translate: the Parameters as a dict."""
    def expand_ecl(self, ecl: str) -> list[dict[str, Any]]:
        """The concepts an ECL expression selects: {"system", "code", "display"}."""
    def search(self, text: str, ecl: Optional[str] = None, limit: int = 10) -> list[dict[str, Any]]:
        """Description search: {"id", "conceptId", "term", "preferredTerm"}, shortest term first."""
    def info(self) -> dict[str, Any]: ...
