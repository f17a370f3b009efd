"""Module paths of earlier versions still give their public names, resolved to the new homes."""
import importlib

import pytest

import fastbpe
from fastbpe._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_public_name_resolves(old):
    module = importlib.import_module(old)
    target = MOVED[old]
    names = module.__all__ if isinstance(target, str) else list(target)
    for name in names:
        assert getattr(module, name) is not None, f"{old}.{name}"


def test_old_paths_are_the_new_objects():
    from fastbpe.chunking import chunk_bounds
    from fastbpe.counting import count_words, count_words_reference
    from fastbpe.formats import from_huggingface, load_tokenizer, openai
    from fastbpe.tokenizer import Tokenizer, bytes_to_unicode

    assert Tokenizer is fastbpe.Tokenizer and count_words is fastbpe.count_words
    assert openai is fastbpe.openai and load_tokenizer is fastbpe.load
    assert from_huggingface == fastbpe.Tokenizer.from_huggingface
    assert chunk_bounds is fastbpe.split.chunk_bounds
    assert bytes_to_unicode is fastbpe.formats.bytelevel.bytes_to_unicode
    assert list(count_words_reference(["a b a"]).items()) == list(fastbpe.count_words(iter(["a b a"])).items())
    assert importlib.import_module("fastbpe.kernels") is importlib.import_module("fastbpe.embed.kernels")


def test_pretokenize_is_the_function():
    assert fastbpe.pretokenize("a b", "gpt2") == ["a", " b"]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("fastbpe.pretokenize")
    with pytest.raises(AttributeError):
        importlib.import_module("fastbpe.tokenizer").no_such_name
