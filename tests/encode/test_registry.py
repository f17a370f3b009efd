"""OpenAI's encodings by name (get_encoding, encoding_for_model) and fastbpe.load on every format."""
import shutil

import pytest

import fastbpe
from fastbpe.encode import registry
from fastbpe.formats import OPENAI_ENCODINGS


@pytest.fixture
def shared_encodings(shared_data, monkeypatch):
    folder = shared_data.path("tokenizers", "tiktoken")
    monkeypatch.setenv("FASTBPE_ENCODINGS", str(folder))
    return folder


@pytest.mark.parametrize("name", sorted(OPENAI_ENCODINGS))
def test_get_encoding_encodes_as_tiktoken(shared_encodings, tiktoken_encoding, name, shared_data):
    tok = fastbpe.get_encoding(name)
    oracle = tiktoken_encoding(name)
    text = "".join(shared_data.rows("parallel_multi.tsv.gz", 200)) + " <|endoftext|> done"
    assert tok.encode(text, allowed_special="all") == oracle.encode(text, allowed_special="all")
    assert tok.special_tokens == oracle._special_tokens
    mine, theirs = tok.encode_to_numpy(text, allowed_special="all"), oracle.encode_to_numpy(text, allowed_special="all")
    assert mine.dtype == theirs.dtype and (mine == theirs).all()
    assert fastbpe.get_encoding(name) is tok  # built once per process, as tiktoken does


def test_published_hashes_are_those_of_the_shared_files(shared_encodings):
    for file, digest in registry.PUBLISHED_SHA256.items():
        assert registry._sha256(shared_encodings / file) == digest


def test_a_corrupted_or_missing_file_is_a_clear_error(shared_encodings, tmp_path, monkeypatch):
    damaged = bytearray((shared_encodings / "r50k_base.tiktoken").read_bytes())
    damaged[100] ^= 1
    (tmp_path / "r50k_base.tiktoken").write_bytes(bytes(damaged))
    monkeypatch.setenv("FASTBPE_ENCODINGS", str(tmp_path))
    with pytest.raises(ValueError, match="SHA-256 .* not the published") as info:
        fastbpe.get_encoding("r50k_base")
    assert str(tmp_path) in str(info.value) and "openaipublic" in str(info.value)
    with pytest.raises(ValueError, match=f"no cl100k_base.tiktoken in {tmp_path}"):
        fastbpe.get_encoding("cl100k_base")
    # p50k_edit reads p50k_base's file
    shutil.copy(shared_encodings / "p50k_base.tiktoken", tmp_path)
    assert fastbpe.get_encoding("p50k_edit").special_tokens["<|fim_middle|>"] == 50282
    with pytest.raises(ValueError, match="unknown encoding"):
        fastbpe.get_encoding("gpt5_base")
    with pytest.raises(TypeError):
        fastbpe.get_encoding(None)


def test_cache_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("FASTBPE_ENCODINGS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert registry.encodings_folder() == tmp_path / "fastbpe"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert registry.encodings_folder() == tmp_path / ".cache" / "fastbpe"


MODEL_NAMES = ["gpt-4o", "gpt-4o-2024-05-13", "gpt-4", "gpt-4-0314", "gpt-4-32k", "gpt-3.5-turbo",
               "gpt-3.5-turbo-0301", "gpt-35-turbo-16k", "o1", "o1-mini", "o3-mini", "o4-mini",
               "o4-mini-2025", "gpt-4.1", "gpt-4.1-nano", "gpt-5", "gpt-5-mini", "chatgpt-4o-latest",
               "text-embedding-3-small", "text-embedding-ada-002", "davinci-002", "ft:gpt-4o:org:x",
               "ft:gpt-3.5-turbo:org", "ft:davinci-002:x", "text-davinci-003", "text-davinci-edit-001",
               "code-davinci-002", "davinci", "ada", "text-search-ada-doc-001", "gpt-4.5-preview", "gpt2"]


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_model_names_map_as_tiktoken_maps_them(model):
    tiktoken_model = pytest.importorskip("tiktoken.model", reason="tiktoken (test extra) is the reference")
    assert registry.encoding_name_for_model(model) == tiktoken_model.encoding_name_for_model(model)


def test_gpt2_names_the_r50k_ranks_as_in_tiktoken(shared_encodings):
    """tiktoken's ``gpt2`` encoding (nanoGPT's ``tiktoken.get_encoding("gpt2")``) reads GPT-2's
    own files, which hold exactly the ranks of ``r50k_base``."""
    assert fastbpe.get_encoding("gpt2") is fastbpe.get_encoding("r50k_base")
    assert fastbpe.encoding_for_model("gpt2") is fastbpe.get_encoding("r50k_base")
    assert "gpt2" in fastbpe.list_encoding_names()
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) is the reference")
    assert sorted(fastbpe.list_encoding_names()) == sorted(set(tiktoken.list_encoding_names()) - {"o200k_harmony"})


def test_a_command_line_names_a_tokenizer_by_encoding_or_model(shared_encodings):
    assert registry.resolve_tokenizer("gpt-4o") is fastbpe.get_encoding("o200k_base")
    assert registry.resolve_tokenizer("gpt2") is fastbpe.get_encoding("r50k_base")
    with pytest.raises(ValueError, match=r"'gpt-9z' is no tokenizer file, encoding name \(cl100k_base, gpt2"):
        registry.resolve_tokenizer("gpt-9z")


def test_unknown_model_is_a_key_error():
    with pytest.raises(KeyError, match="get_encoding"):
        fastbpe.encoding_for_model("llama-3")


def test_an_openai_name_with_another_encodings_file_is_refused(shared_encodings):
    with pytest.raises(ValueError, match="looks like cl100k_base"):
        fastbpe.openai("o200k_base", shared_encodings / "cl100k_base.tiktoken")
    with pytest.raises(ValueError, match="r50k_base"):
        fastbpe.openai("cl100k_base", shared_encodings / "r50k_base.tiktoken")


def test_load_reads_gpt2_files_by_folder_or_either_file(shared_data, tmp_path, tiktoken_encoding):
    encoder = shared_data.path("tokenizers", "encoder.json")
    vocab = shared_data.path("tokenizers", "vocab.bpe")
    folder = tmp_path / "gpt2"
    folder.mkdir()
    shutil.copy(encoder, folder)
    shutil.copy(vocab, folder)
    text = "Hello world, it's 2024!  ünïcode 😀"
    want = tiktoken_encoding("r50k_base").encode(text)
    for path in (folder, folder / "encoder.json", folder / "vocab.bpe"):
        assert fastbpe.load(path).encode(text) == want, path
    # the same two files as Hugging Face's save_model names them hold no split pattern (Qwen's
    # are not GPT-2's): load refuses their folder, and either file, saying how to read them
    slow = tmp_path / "slow"
    slow.mkdir()
    shutil.copy(encoder, slow / "vocab.json")
    shutil.copy(vocab, slow / "merges.txt")
    for path in (slow, slow / "vocab.json", slow / "merges.txt"):
        with pytest.raises(ValueError, match=r"vocab.json \+ merges.txt hold no split pattern: "
                                             r"Tokenizer.from_gpt2\(vocab_json, merges_txt, pattern=...\) reads them"):
            fastbpe.load(path)
    assert fastbpe.Tokenizer.from_gpt2(slow / "vocab.json", slow / "merges.txt").encode(text) == want
    qwen_split = fastbpe.Tokenizer.from_gpt2(slow / "vocab.json", slow / "merges.txt", pattern="qwen")
    assert qwen_split.encode("2024") == [tiktoken_encoding("r50k_base").encode_single_token(d) for d in "2024"]
    (folder / "vocab.bpe").unlink()
    with pytest.raises(ValueError, match="vocab.bpe is missing"):
        fastbpe.load(folder / "encoder.json")
    with pytest.raises(ValueError, match="tokenizer.json or GPT-2"):
        fastbpe.load(folder)


def test_a_file_is_known_by_its_content_where_its_name_says_nothing(shared_data, tmp_path):
    """A SentencePiece model under another name (Mistral's tokenizer.model.v3), a rank file
    under a .model name (Llama 3's tokenizer.model) and a compressed file are each known by
    their first bytes: the model loads, the others are refused saying what they are."""
    import gzip

    import sentencepiece as spm

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=30,
                                   model_type="bpe", minloglevel=2, num_threads=1)
    (tmp_path / "sp.model").rename(tmp_path / "tokenizer.model.v3")
    assert fastbpe.load(tmp_path / "tokenizer.model.v3").encode("the cat") == \
        spm.SentencePieceProcessor(model_file=str(tmp_path / "tokenizer.model.v3")).encode("the cat")
    ranks = shared_data.path("tokenizers", "tiktoken", "r50k_base.tiktoken").read_bytes()
    (tmp_path / "tokenizer.model").write_bytes(ranks)
    with pytest.raises(ValueError, match="a tiktoken rank file .*Tokenizer.from_tiktoken"):
        fastbpe.load(tmp_path / "tokenizer.model")
    (tmp_path / "r50k_base.tiktoken.gz").write_bytes(gzip.compress(ranks))
    with pytest.raises(ValueError, match="a compressed file; decompress it first"):
        fastbpe.load(tmp_path / "r50k_base.tiktoken.gz")


def test_an_unrecognised_file_says_which_loaders_exist(tmp_path):
    (tmp_path / "x.json").write_text('{"a": "b"}')
    with pytest.raises(ValueError, match="x.json.*tokenizer.json.*encoder.json"):
        fastbpe.load(tmp_path / "x.json")
