from . import fhir as fhir, hl7 as hl7, terminology as terminology

__version__: str

class ThothError(ValueError):
    """An input Thoth cannot read or an operation it cannot do; the message is the CLI's."""
