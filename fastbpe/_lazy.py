"""A package's names imported from their modules on first use (PEP 562): importing the package
costs nothing until a name is used, and ``from package import name`` works as if the package
had imported it."""
import sys
from importlib import import_module
from typing import Callable, Dict, Iterable, List, Tuple


def lazy_names(package: str, homes: Dict[str, str], submodules: Iterable[str] = ()
               ) -> Tuple[Callable[[str], object], Callable[[], List[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose name ``x`` lives at
    ``homes[x]``: ``"module:attribute"``, or ``"module"`` when ``x`` is that module itself;
    each of ``submodules`` is the module of its own name. A name, once looked up, is kept in
    the package's namespace, so each is imported once.

    >>> import fastbpe.corpus
    >>> getattr_, _ = lazy_names("fastbpe.corpus", {"open_bytes": "files:open_bytes"})
    >>> getattr_("open_bytes").__module__
    'fastbpe.corpus.files'
    """
    namespace = sys.modules[package].__dict__
    submodules = frozenset(submodules)

    def __getattr__(name: str):
        if name in homes:
            module, _, attribute = homes[name].partition(":")
            value = import_module(f".{module}", package)
            if attribute:
                value = getattr(value, attribute)
        elif name in submodules:
            value = import_module(f".{name}", package)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> List[str]:
        return sorted(set(namespace) | set(homes) | submodules)

    return __getattr__, __dir__
