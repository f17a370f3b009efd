"""fastbpe: byte-pair-encoding tokenizers trained and used at corpus scale on CPU."""
from . import reference

__version__ = "0.1.0"
__all__ = ["reference"]
