"""OpenAI's encodings by name, as tiktoken's ``get_encoding`` and ``encoding_for_model`` give them.

Nothing is downloaded: ``get_encoding(name)`` reads ``{name}.tiktoken`` (``p50k_edit`` shares
``p50k_base.tiktoken``) from the folder named by the environment variable ``FASTBPE_ENCODINGS``,
else from the per-user cache folder (``$XDG_CACHE_HOME/fastbpe``, by default
``~/.cache/fastbpe``), and checks its SHA-256 against the hash OpenAI publishes for it (the
``expected_hash`` of tiktoken's ``tiktoken_ext/openai_public.py``), so a damaged or different
file is an error rather than a tokenizer that silently disagrees with tiktoken.
"""
import os
import threading
from pathlib import Path
from typing import Dict, Union

from ..formats.tiktoken import OPENAI_ENCODINGS
from .loading import load, openai
from .tokenizer import Tokenizer

__all__ = ["get_encoding", "encoding_for_model", "encoding_name_for_model", "encodings_folder", "resolve_tokenizer",
           "NAME_ALIASES",
           "list_encoding_names", "PUBLISHED_SHA256"]

ENV_VAR = "FASTBPE_ENCODINGS"
DOWNLOAD_URL = "https://openaipublic.blob.core.windows.net/encodings/{file}"

# The rank file each encoding reads and its published SHA-256.
RANK_FILE = {name: f"{'p50k_base' if name == 'p50k_edit' else name}.tiktoken" for name in OPENAI_ENCODINGS}
PUBLISHED_SHA256: Dict[str, str] = {
    "r50k_base.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "p50k_base.tiktoken": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    "cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

# Model names and name prefixes -> encoding, the tables of tiktoken's model.py (models whose
# encoding fastbpe does not provide, such as gpt-oss's "o200k_harmony", are left out; "gpt2" is
# r50k_base's ranks: NAME_ALIASES).
MODEL_TO_ENCODING: Dict[str, str] = {
    "gpt2": "gpt2",
    **dict.fromkeys(["o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"], "o200k_base"),
    **dict.fromkeys(["gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
                     "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"],
                    "cl100k_base"),
    **dict.fromkeys(["text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001",
                     "code-cushman-002", "code-cushman-001", "davinci-codex", "cushman-codex"], "p50k_base"),
    **dict.fromkeys(["text-davinci-edit-001", "code-davinci-edit-001"], "p50k_edit"),
    **dict.fromkeys(["text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001", "davinci",
                     "curie", "babbage", "ada", "text-similarity-davinci-001", "text-similarity-curie-001",
                     "text-similarity-babbage-001", "text-similarity-ada-001", "text-search-davinci-doc-001",
                     "text-search-curie-doc-001", "text-search-babbage-doc-001", "text-search-ada-doc-001",
                     "code-search-babbage-code-001", "code-search-ada-code-001"], "r50k_base"),
}
# Checked in this order (tiktoken's): the first prefix a name starts with decides.
MODEL_PREFIX_TO_ENCODING: Dict[str, str] = {
    **dict.fromkeys(["o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-", "chatgpt-4o-", "gpt-4o-"],
                    "o200k_base"),
    **dict.fromkeys(["gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-"], "cl100k_base"),
    "ft:gpt-4o": "o200k_base",
    **dict.fromkeys(["ft:gpt-4", "ft:gpt-3.5-turbo", "ft:davinci-002", "ft:babbage-002"], "cl100k_base"),
}


# Encodings built in this process, by name, with the (path, size, mtime) they were read from: a
# second get_encoding of the same file returns the same tokenizer, as tiktoken's does.
_BUILT: Dict[str, tuple] = {}
_BUILT_LOCK = threading.Lock()


def encodings_folder() -> Path:
    """Where ``get_encoding`` looks: ``$FASTBPE_ENCODINGS``, else ``$XDG_CACHE_HOME/fastbpe``,
    else ``~/.cache/fastbpe``."""
    folder = os.environ.get(ENV_VAR)
    if folder:
        return Path(folder)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "fastbpe"


def list_encoding_names() -> list:
    """The names ``get_encoding`` accepts."""
    return sorted(set(OPENAI_ENCODINGS) | set(NAME_ALIASES))


def _sha256(path: Path) -> str:
    import hashlib  # (only to check a downloaded file: not an import every first call pays)

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# Names that are another encoding: GPT-2's files hold exactly the ranks of r50k_base.
NAME_ALIASES = {"gpt2": "r50k_base"}


def resolve_tokenizer(name_or_path: Union[str, os.PathLike, Tokenizer]) -> Tokenizer:
    """The tokenizer a command line names: an existing path (any file :func:`fastbpe.load`
    reads, or GPT-2's ``encoder.json``/``vocab.bpe`` or their folder), else an OpenAI encoding
    name (``gpt2`` is ``r50k_base``, the same ranks), else an OpenAI model name (``gpt-4o``:
    its encoding, as :func:`encoding_for_model`). A :class:`Tokenizer` is returned as is."""
    if isinstance(name_or_path, Tokenizer):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"a tokenizer is a name, a path or a Tokenizer, got {type(name_or_path).__name__}")
    path = Path(name_or_path)
    if path.exists():
        return load(path)
    name = os.fspath(name_or_path)
    if os.sep in name or name.endswith((".json", ".tiktoken")):
        raise ValueError(f"tokenizer file {name!r} does not exist")
    if NAME_ALIASES.get(name, name) not in OPENAI_ENCODINGS:
        try:
            name = encoding_name_for_model(name)
        except KeyError:
            raise ValueError(f"{name!r} is no tokenizer file, encoding name ({', '.join(list_encoding_names())}) "
                             "or OpenAI model name") from None
    return get_encoding(name)


def get_encoding(name: str) -> Tokenizer:
    """OpenAI's encoding ``name`` (``r50k_base``, ``p50k_base``, ``p50k_edit``, ``cl100k_base``,
    ``o200k_base``; ``gpt2``, as tiktoken names GPT-2's files, is ``r50k_base``: the same ranks)
    with its published pattern and special tokens, from the verified rank file in
    :func:`encodings_folder`. A missing or mismatched file is a ValueError saying where fastbpe
    looked and where the file is published."""
    if not isinstance(name, str):
        raise TypeError(f"encoding name must be a str, got {type(name).__name__}")
    name = NAME_ALIASES.get(name, name)
    if name not in OPENAI_ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; known: {list_encoding_names()}")
    file = RANK_FILE[name]
    folder = encodings_folder()
    path = folder / file
    how = (f"download {DOWNLOAD_URL.format(file=file)} into {folder} (or point {ENV_VAR} at a folder "
           f"holding {file})")
    if not path.is_file():
        raise ValueError(f"{name}: no {file} in {folder}; {how}")
    stat = path.stat()
    key = (os.fspath(path), stat.st_size, stat.st_mtime_ns)
    with _BUILT_LOCK:
        built = _BUILT.get(name)
        if built is not None and built[0] == key:
            return built[1]
        found = _sha256(path)
        if found != PUBLISHED_SHA256[file]:
            raise ValueError(f"{path}: SHA-256 {found} is not the published {PUBLISHED_SHA256[file]} "
                             f"(a damaged or different file); {how}")
        tok = openai(name, path)
        _BUILT[name] = (key, tok)
        return tok


def encoding_name_for_model(model_name: str) -> str:
    """The encoding of an OpenAI model name (exact names first, then name prefixes, as
    tiktoken's ``encoding_name_for_model``); KeyError for a name it does not know."""
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, encoding in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding
    raise KeyError(f"no known encoding for model {model_name!r}; use fastbpe.get_encoding(name) with one "
                   f"of {list_encoding_names()}")


def encoding_for_model(model_name: str) -> Tokenizer:
    """``get_encoding`` of the model's encoding (:func:`encoding_name_for_model`)."""
    return get_encoding(encoding_name_for_model(model_name))
