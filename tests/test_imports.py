"""The package's modules form layers: no module imports one that (through others) imports it
back, counting the imports inside functions too (a lazy import hides a cycle from the
interpreter, not from the reader). A package's ``__init__`` re-exports its children by design
and is left out."""
import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parents[1] / "fastbpe"


def module_files() -> Dict[str, Path]:
    """``fastbpe.learn.train`` -> its file, for every module of the package."""
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def imported_modules(name: str, path: Path, modules: Set[str]) -> Set[str]:
    """The package's modules that ``name`` imports, anywhere in its file.

    A name taken from a package is that package's submodule when there is one
    (``from ..encode import tokenizer``), else the package itself.
    """
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return (found & modules) - {name}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The groups of two or more nodes that reach each other (Tarjan's strongly connected
    components).

    >>> cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    order: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_the_finder_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back():
    files = module_files()
    plain = {name for name, path in files.items() if path.name != "__init__.py"}
    graph = {name: imported_modules(name, files[name], set(files)) & plain for name in plain}
    assert sum(map(len, graph.values())) > 100  # the imports were found at all
    assert cycles(graph) == []


def _modules_after(code: str, package_only: bool = True) -> Set[str]:
    """The package's modules (or all modules) loaded in a fresh interpreter after running ``code``."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    return {name for name in done.stdout.split() if name.startswith("fastbpe") or not package_only}


def test_importing_the_package_loads_no_stage():
    loaded = _modules_after("import fastbpe")
    assert loaded <= {"fastbpe", "fastbpe._lazy", "fastbpe._moved"}, sorted(loaded)


def test_the_encode_command_loads_neither_the_trainer_nor_the_analyses():
    loaded = _modules_after("from fastbpe.cli import build_parser\n"
                            "build_parser().parse_args(['encode', 'x.txt', '-t', 't.json', '-o', 'out'])")
    assert "fastbpe.cli.encode" in loaded and "fastbpe.shards" in loaded
    unwanted = {name for name in loaded if name.startswith(("fastbpe.learn", "fastbpe.analysis", "fastbpe.embed"))
                or name in ("fastbpe.corpus.count", "fastbpe.cluster", "fastbpe.cli.train", "fastbpe.cli.audit")}
    assert not unwanted, sorted(unwanted)


def test_training_and_encoding_with_a_named_pattern_import_no_regex_module():
    # The compiled scanners split the named patterns: the regex module (about 18 ms to import)
    # is for user regexes and special tokens found in a text, the thread pool's modules for
    # more than one worker, hashlib for long file names and downloads.
    loaded = _modules_after(
        "import fastbpe\n"
        "tok = fastbpe.train(text='some words to learn from, and more words ' * 20, vocab_size=300,\n"
        "                    special_tokens=['<|end|>'], workers=1, progress=False)\n"
        "assert tok.encode('words to encode') == tok.encode_batch(['words to encode'], workers=1)[0]\n",
        package_only=False)
    assert "fastbpe.learn.train" in loaded and "fastbpe.encode.special" in loaded
    assert not loaded & {"regex", "concurrent.futures", "hashlib"}, sorted(loaded & {"regex", "concurrent.futures", "hashlib"})


def test_every_public_name_resolves_to_its_home():
    from importlib import import_module

    import fastbpe
    from fastbpe import corpus, reference

    count, files, wordtable, loading, registry, tokenizer, learner, train, encode, learning = (
        import_module(f"fastbpe.{name}") for name in (
            "corpus.count", "corpus.files", "corpus.wordtable", "encode.loading", "encode.registry",
            "encode.tokenizer", "learn.learner", "learn.train", "reference.encode", "reference.learning"))

    homes = {"Tokenizer": tokenizer.Tokenizer, "load": loading.load, "openai": loading.openai,
             "get_encoding": registry.get_encoding, "train": train.train, "train_words": train.train_words,
             "learn_from_table": learner.learn_from_table, "count_words": count.count_words,
             "WordTable": wordtable.WordTable, "CorpusDecodeError": files.CorpusDecodeError}
    for name, value in homes.items():
        assert getattr(fastbpe, name) is value, name
    for package in (fastbpe, corpus, reference):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
            assert name in dir(package), (package.__name__, name)
    assert reference.encode is encode and reference.learn is learning.learn
    assert corpus.count_words is count.count_words
    namespace: dict = {}
    exec("from fastbpe import *", namespace)
    assert set(fastbpe.__all__) <= set(namespace)
    for package, missing in ((fastbpe, "no_such_name"), (corpus, "cut_stream"), (reference, "nothing")):
        try:
            getattr(package, missing)
        except AttributeError as exc:
            assert missing in str(exc)
        else:
            raise AssertionError(f"{package.__name__}.{missing} resolved")
