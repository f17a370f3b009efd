"""SentencePiece-style Hugging Face files (character-level BPE with byte fallback, or with an
unknown token), built by the tokenizers library itself and compared with it."""
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastbpe import Tokenizer

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) builds and verifies the files")

BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]
EDGE_CASES = ["", " ", "   ", " leading", "trailing ", "repeated   spaces  inside", "\t\n", "😀 emoji 🙂🙂",
              "ǅ ꙮ 𝔘 missing characters", "a\u0301 combining", "<s>inside</s> text", "▁ the marker itself",
              "<0x41> spelled byte token"]


def _layout(rows, layout: str, byte_fallback: bool = True, fuse_unk: bool = True) -> dict:
    """A tokenizer.json trained by tokenizers: BPE over characters with byte fallback (or
    without: a character without a token is ``<unk>``), a small alphabet (so that many
    characters of the test text are missing), and the spaces handled as Llama 2 does
    (normalizer) or by a Metaspace pre-tokenizer (split or not)."""
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE(byte_fallback=byte_fallback, unk_token="<unk>", fuse_unk=fuse_unk))
    if layout == "normalizer":
        hf.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        hf.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                        decoders.Strip(" ", 1, 0)])
    elif layout == "no-prefix":  # Gemma's: no ▁ before the text, and every ▁ decodes to a space
        hf.normalizer = normalizers.Replace(" ", "▁")
        hf.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    else:
        hf.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always",
                                                    split=layout == "metaspace-split")
        hf.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        if byte_fallback:  # the byte pieces decoded by the steps after it (alone, it leaves them as they are)
            hf.decoder = decoders.Sequence([hf.decoder, decoders.ByteFallback(), decoders.Fuse()])
    trainer = trainers.BpeTrainer(vocab_size=800, special_tokens=["<unk>", "<s>", "</s>",
                                                                  *(BYTE_TOKENS if byte_fallback else [])],
                                  limit_alphabet=120, show_progress=False)
    hf.train_from_iterator(rows, trainer)
    data = json.loads(hf.to_str())
    # the byte tokens live in the vocabulary only, as in SentencePiece conversions
    data["added_tokens"] = [a for a in data["added_tokens"] if a["content"] not in BYTE_TOKENS]
    return data


@pytest.mark.parametrize("layout", ["normalizer", "metaspace-split"])
@pytest.mark.parametrize("fuse_unk", [True, False])
def test_unknown_token_file_encodes_as_tokenizers(tmp_path, rows, layout, fuse_unk):
    """Without byte fallback, a character without a token is the unk_token (a run of them one,
    with fuse_unk): read, and written back, as tokenizers encodes it."""
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_layout(rows[::2], layout, byte_fallback=False, fuse_unk=fuse_unk),
                               ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_huggingface(path)
    assert (tok.unk_token, tok.fuse_unk, tok.byte_fallback) == ("<unk>", fuse_unk, False)
    tok.to_huggingface(tmp_path / "written.json")
    written = tokenizers.Tokenizer.from_file(str(tmp_path / "written.json"))
    texts = rows + EDGE_CASES + ["\n".join(rows)]
    unknown = hf.token_to_id("<unk>")
    for text in texts:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, allowed_special="all") == expected, text
        assert written.encode(text, add_special_tokens=False).ids == expected, text
        assert tok.encode_ordinary_batch([text, text]) == [tok.encode_ordinary(text)] * 2
    runs = [hf.encode(t, add_special_tokens=False).ids for t in texts]
    assert sum(unknown in ids for ids in runs) > 10  # the test text really has characters outside the vocabulary
    # (and runs of them, which fuse_unk makes one)
    assert any(a == b == unknown for ids in runs for a, b in zip(ids, ids[1:])) != fuse_unk


def test_fastbpe_s_own_sentencepiece_step_is_not_read_from_a_tokenizer_json(tmp_path, rows):
    """tokenizers refuses a normaliser of type SentencePiece (fastbpe's own step): so does
    fastbpe, from a tokenizer.json."""
    data = _layout(rows[::4], "normalizer", byte_fallback=False)
    data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "SentencePiece", "precompiled_charsmap": "",
                                                                 "add_dummy_prefix": True,
                                                                 "remove_extra_whitespaces": False}]}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(Exception):
        tokenizers.Tokenizer.from_file(str(path))
    with pytest.raises(ValueError, match="normalizer 'SentencePiece' is fastbpe's own step"):
        Tokenizer.from_huggingface(path)


@pytest.fixture(scope="module")
def rows(shared_data):
    return [cell for row in shared_data.rows("parallel_multi.tsv.gz", 300) for cell in row.rstrip("\n").split("\t")]


@pytest.mark.parametrize("layout", ["normalizer", "no-prefix", "metaspace-split", "metaspace-whole"])
def test_byte_fallback_file_encodes_as_tokenizers(tmp_path, rows, layout):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_layout(rows[::2], layout), ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_huggingface(path)
    texts = rows + EDGE_CASES + ["\n".join(rows)]
    for text in texts:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, allowed_special="all") == expected, text
    fallen_back = sum(hf.token_to_id("<0xE4>") in hf.encode(t, add_special_tokens=False).ids for t in texts)
    assert fallen_back > 10  # the test text really has characters outside the vocabulary
    for text in texts:
        ids = tok.encode(text, allowed_special="all")
        # the file's own decoder: Replace, ByteFallback, Fuse[, Strip]; or Metaspace, which drops
        # every marker of the first token, and leaves byte tokens as their names
        if layout in ("normalizer", "no-prefix") or not set(ids) & set(tok._byte_token_ids().tolist()):
            assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), text
        # (the marker put before the text is dropped; Metaspace drops the first token's others too)
        if "<s>" not in text and "▁" not in text and (layout == "no-prefix" or not text.startswith(" ")) \
                and (not layout.startswith("metaspace") or not ids or tok.id_to_token(ids[0]).rfind("▁") <= 0):
            assert tok.decode(ids) == text

    # written back: tokenizers loads the file and gives the same ids; fastbpe's own file too
    tok.to_huggingface(tmp_path / "back.json")
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "back.json"))
    tok.save(tmp_path / "native.json")
    again = Tokenizer.load(tmp_path / "native.json")
    assert again == tok
    for text in texts:
        ids = tok.encode(text, allowed_special="all")
        assert back.encode(text, add_special_tokens=False).ids == ids, text
        assert again.encode(text, allowed_special="all") == ids
        # (the decoder as it was read: a Metaspace decoder still leaves byte tokens as names)
        assert back.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)
        assert again.decode(ids) == tok.decode(ids)


@pytest.fixture(scope="module")
def byte_fallback_pair(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("byte_fallback") / "tokenizer.json"
    path.write_text(json.dumps(_layout(rows[::2], "normalizer"), ensure_ascii=False), encoding="utf-8")
    return tokenizers.Tokenizer.from_file(str(path)), Tokenizer.from_huggingface(path)


# bytes that begin, continue and end characters, or never occur in UTF-8 (C0, ED A0: a surrogate)
ODD_BYTES = [0x41, 0x20, 0x80, 0x96, 0xA0, 0xA9, 0xBF, 0xC0, 0xC3, 0xE2, 0xE4, 0xED, 0xF0, 0x9F, 0x98]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_byte_tokens_that_spell_no_character_decode_as_tokenizers_decodes_them(byte_fallback_pair, data):
    """Runs of byte tokens whose bytes are not UTF-8 (a character cut short, as a decode of
    part of a model's output has, a stray continuation byte, a surrogate), between and beside
    other tokens: one U+FFFD for each token of such a run, as tokenizers' ByteFallback gives;
    and a ▁ that byte tokens spell, which stays ▁ (the decoder's Replace sees their names)."""
    hf, tok = byte_fallback_pair
    words = [i for i in range(hf.get_vocab_size()) if not hf.id_to_token(i).startswith("<")][::40]
    pieces = [hf.token_to_id(f"<0x{b:02X}>") for b in ODD_BYTES] + words + [hf.token_to_id("<s>")]
    marker = [hf.token_to_id(f"<0x{b:02X}>") for b in "▁".encode()]
    parts = data.draw(st.lists(st.one_of(st.sampled_from(pieces).map(lambda i: [i]), st.just(marker)), max_size=10))
    ids = [i for part in parts for i in part]
    assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), ids


@pytest.fixture(scope="module")
def added_pair(tmp_path_factory, rows):
    """Llama 2's layout with added tokens: two special ones (one matched in the normalised
    text), and two that are not special (one matched in the normalised text)."""
    data = _layout(rows[::2], "normalizer")
    n = max(data["model"]["vocab"].values()) + 1
    off = dict(lstrip=False, rstrip=False, single_word=False)
    data["added_tokens"] += [{"id": n, "content": "<m>", "special": True, "normalized": False, **off},
                             {"id": n + 1, "content": "<t>", "special": False, "normalized": False, **off},
                             {"id": n + 2, "content": "<n>", "special": False, "normalized": True, **off},
                             {"id": n + 3, "content": "<q>", "special": True, "normalized": True, **off}]
    path = tmp_path_factory.mktemp("added") / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return tokenizers.Tokenizer.from_file(str(path)), Tokenizer.from_huggingface(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_skip_special_tokens_leaves_out_what_tokenizers_leaves_out(added_pair, data):
    """decode(skip_special_tokens=True) leaves out the special tokens (<s>, </s>, <unk>, <m>)
    before the space rules, and keeps the added tokens that are not special, as tokenizers'
    decode does; and, as it does, a special token matched in the normalised text, whose text
    it decodes as "▁<q>", which is no special token's; lists, arrays and decode_batch alike.
    decode_single_token_bytes gives the names, as ever."""
    import numpy as np

    hf, tok = added_pair
    words = [i for i in range(hf.get_vocab_size()) if not hf.id_to_token(i).startswith("<")][::40]
    added = [hf.token_to_id(t) for t in ("<s>", "</s>", "<unk>", "<m>", "<t>", "<n>", "<q>")]
    assert [tok.decode_single_token_bytes(i) for i in added[3:]] == [b"<m>", b"<t>", b"<n>", b"<q>"]
    pieces = words + added + [hf.token_to_id(f"<0x{b:02X}>") for b in ODD_BYTES]
    ids = data.draw(st.lists(st.sampled_from(pieces), max_size=10))
    for skip in (True, False):
        want = hf.decode(ids, skip_special_tokens=skip)
        assert tok.decode(ids, skip_special_tokens=skip) == want, [hf.id_to_token(i) for i in ids]
        assert tok.decode(np.array(ids, dtype=np.int64), skip_special_tokens=skip) == want
        assert tok.decode_batch([ids, ids], skip_special_tokens=skip) == [want, want]


@pytest.fixture(scope="module", params=["metaspace-split", "metaspace-whole"])
def metaspace_pair(request, tmp_path_factory, rows):
    """A file with tokenizers' Metaspace pre-tokenizer and decoder, and no byte fallback (as
    tokenizers' SentencePieceBPETokenizer trains them)."""
    path = tmp_path_factory.mktemp("metaspace") / "tokenizer.json"
    data = _layout(rows[::2], request.param, byte_fallback=False)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return tokenizers.Tokenizer.from_file(str(path)), Tokenizer.from_huggingface(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_ids_decode_as_the_metaspace_decoder_decodes_them(metaspace_pair, data):
    """tokenizers' Metaspace decoder drops every ▁ of the first token (not the text's first
    space): ids that begin with a run of ▁, with special tokens, with a token that holds ▁
    inside, as a model generates them."""
    hf, tok = metaspace_pair
    size = hf.get_vocab_size()
    marked = [i for i in range(size) if "▁" in hf.id_to_token(i)]
    pieces = marked[:30] + marked[-30:] + list(range(size - 20, size)) + [0, 1, 2]
    ids = data.draw(st.lists(st.sampled_from(pieces), max_size=8))
    assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), [hf.id_to_token(i) for i in ids]


@pytest.fixture(scope="module")
def metaspace_fallback_pair(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("fallback") / "tokenizer.json"
    path.write_text(json.dumps(_layout(rows[::2], "metaspace-split"), ensure_ascii=False), encoding="utf-8")
    return tokenizers.Tokenizer.from_file(str(path)), Tokenizer.from_huggingface(path)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_metaspace_decoder_followed_by_byte_fallback_decodes_as_tokenizers(metaspace_fallback_pair, data):
    """Sequence[Metaspace, ByteFallback, Fuse]: the Metaspace's spaces and first-token rule,
    the byte pieces joined into their characters (read before as no space marker at all)."""
    hf, tok = metaspace_fallback_pair
    size = hf.get_vocab_size()
    marked = [i for i in range(size) if "▁" in hf.id_to_token(i)]
    pieces = marked[:30] + marked[-30:] + [hf.token_to_id(f"<0x{b:02X}>") for b in ODD_BYTES] + [0, 1, 2]
    ids = data.draw(st.lists(st.sampled_from(pieces), max_size=8))
    assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), [hf.id_to_token(i) for i in ids]


def test_a_metaspace_file_is_written_back_with_its_decoder(metaspace_pair, tmp_path):
    hf, tok = metaspace_pair
    tok.to_huggingface(tmp_path / "back.json")
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "back.json"))
    assert json.loads((tmp_path / "back.json").read_text(encoding="utf-8"))["decoder"]["type"] == "Metaspace"
    ids = [i for i in range(hf.get_vocab_size()) if "▁" in hf.id_to_token(i)][:50]
    for start in range(0, 50, 5):
        assert back.decode(ids[start:start + 5], skip_special_tokens=False) == tok.decode(ids[start:start + 5])


def test_byte_fallback_files_that_cannot_be_reproduced_are_refused(tmp_path, rows):
    data = _layout(rows[:400], "normalizer")
    path = tmp_path / "tokenizer.json"

    def refused(change, words):
        changed = json.loads(json.dumps(data))
        change(changed)
        path.write_text(json.dumps(changed), encoding="utf-8")
        with pytest.raises(ValueError, match=words):
            Tokenizer.from_huggingface(path)

    refused(lambda d: d["model"]["vocab"].pop("<0x41>"), "<0x41> is missing")
    refused(lambda d: d["model"].update(ignore_merges=True), "ignore_merges")
    refused(lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer 'Whitespace'")
    refused(lambda d: d.update(pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                                              "split": True}), "prepend_scheme='first' with added tokens")
    refused(lambda d: d["model"].update(byte_fallback="yes"), "byte_fallback must be true or false")
    # an added token that is a vocab entry BPE needs: tokenizers gives its id to both
    made = next(left + right for left, right in data["model"]["merges"] if left.startswith("▁"))
    for content in (made, "<0x41>"):
        refused(lambda d: d["added_tokens"].append({"id": d["model"]["vocab"][content], "content": content,
                                                    "special": True, "single_word": False, "lstrip": False,
                                                    "rstrip": False, "normalized": False}),
                f"'{content}' is also vocab entry")


def test_byte_fallback_added_token_ids_are_the_ones_tokenizers_gives(tmp_path, rows):
    data = _layout(rows[:400], "normalizer")
    n = len(data["model"]["vocab"])
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    data["added_tokens"] += [{"id": n + 40, "content": "<x>", "special": True, **flags},
                             {"id": 3, "content": "<y>", "special": False, **flags}]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    with pytest.warns(UserWarning, match="tokenizers gives it"):
        tok = Tokenizer.from_huggingface(path)
    assert tok.special_tokens == {t.content: i for i, t in hf.get_added_tokens_decoder().items()}
    text = "a<x>b <y><unk> c"  # (<unk> is an added token of the file, in its vocabulary)
    assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids


def test_byte_fallback_needs_character_units():
    with pytest.raises(ValueError, match="unit='chars'"):
        Tokenizer([b"a"], [], byte_fallback=True)
    with pytest.raises(ValueError, match="<0x00> is missing"):
        Tokenizer([b"a", b"b"], [], unit="chars", byte_fallback=True)


@pytest.mark.parametrize("layout", ["normalizer", "metaspace-split"])
def test_added_token_options_in_character_level_files(tmp_path, rows, layout):
    """lstrip/rstrip/single_word added tokens (and, with Llama 2's normaliser, a normalized one,
    whose own text becomes "▁<n>") match as tokenizers matches them."""
    data = _layout(rows[::4], layout)
    n = max(data["model"]["vocab"].values()) + 1
    off = dict(lstrip=False, rstrip=False, single_word=False, normalized=False)
    options = [dict(lstrip=True, rstrip=True), dict(single_word=True), dict(rstrip=True, single_word=True)]
    data["added_tokens"] += [{"id": n + k, "content": name, "special": k == 0, **off, **opts}
                             for k, (name, opts) in enumerate(zip(["<m>", "<w>", "<r>"], options))]
    if layout == "normalizer":
        data["added_tokens"].append({"id": n + 3, "content": "<n>", "special": False, **off, "normalized": True})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_huggingface(path)
    spliced = [f"{a}  <m>\n{b}<w> <w>{a} <r>  <n>{b} <n>" for a, b in zip(rows[:60], rows[60:120])]
    for text in [*spliced, "<n>", " <n> <n>x", "a <m> b", "<m><m>", "  <r>  "]:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, allowed_special="all") == expected, repr(text)
        if layout == "normalizer":  # (and decoded: the normalized one as its own text normalised, "▁<n>")
            assert tok.decode(expected) == hf.decode(expected, skip_special_tokens=False), repr(text)


def test_a_normalized_token_that_normalising_makes_is_found_on_every_path(tmp_path, rows):
    """A ``normalized`` added token that is not special is found in the normalised text: in a
    text whose NFKC makes it (``＜n＞``) too, on encode's one compiled call and in the batch
    calls, as tokenizers finds it."""
    data = _layout(rows[::4], "normalizer")
    data["normalizer"]["normalizers"].insert(0, {"type": "NFKC"})
    off = dict(lstrip=False, rstrip=False, single_word=False)
    data["added_tokens"].append({"id": max(data["model"]["vocab"].values()) + 1, "content": "<n>", "special": False,
                                 **off, "normalized": True})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_huggingface(path)
    texts = [f"＜n＞{a} ＜n＞ x" for a in rows[:40]] + ["＜n＞", " <n>", "ｘ＜n＞ ＜n＞"] + rows[40:80]
    expected = [hf.encode(text, add_special_tokens=False).ids for text in texts]
    assert [tok.encode(text) for text in texts] == [tok.encode_ordinary(text) for text in texts] == expected
    for workers in (1, 2):
        assert tok.encode_batch(texts, num_threads=workers) == expected
        assert [ids.tolist() for ids in tok.encode_batch(texts, num_threads=workers, as_numpy=True)] == expected
    assert any(tok.special_tokens["<n>"] in ids for ids in expected[:40])
    # decoded as tokenizers decodes a normalized added token: its text normalised ("▁<n>"), so
    # that the space it was found after comes back
    n, a = tok.special_tokens["<n>"], tok.encode_ordinary("a")[-1]
    for ids in [*expected, [n], [a, n], [n, a, n], [a, n, n]]:
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), ids
    assert tok.decode(tok.encode("a <n> b")) == "a <n> b"


@pytest.mark.parametrize("form", ["strings", "lists"])
def test_merges_are_read_pair_by_pair(tmp_path, rows, form):
    """The merges of a character-level file, read in bulk: tokenizers' ids in either form,
    with a vocab entry holding a newline (in a merge written as a string, read one merge at a
    time); and a merge of one part next to one of three (as many parts as two pairs, every
    part a vocab entry) is refused, naming the first, not read as two other pairs."""
    data = _layout(rows[::2], "normalizer")
    vocab, merges = data["model"]["vocab"], data["model"]["merges"]
    pairs = [m if isinstance(m, list) else m.split(" ") for m in merges]
    for text in ("\n", "\na"):
        vocab.setdefault(text, len(vocab))
    pairs.append(["\n", "a"])
    data["model"]["merges"] = pairs if form == "lists" else [" ".join(pair) for pair in pairs]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    hf, tok = tokenizers.Tokenizer.from_file(str(path)), Tokenizer.from_huggingface(path)
    for text in rows[:50] + EDGE_CASES + ["x\na\na\n"]:
        assert tok.encode(text, allowed_special="all") == hf.encode(text).ids, text
    (a, b), (c, d) = pairs[0], pairs[1]
    wrong = [[a + b], [c, d, a]] if form == "lists" else [a + b, f"{c} {d} {a}"]
    data["model"]["merges"] = wrong + data["model"]["merges"][2:]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match="merge 0 is not a pair of tokens"):
        Tokenizer.from_huggingface(path)


@pytest.mark.parametrize("kind", ["byte-level", "byte-fallback"])
def test_added_tokens_far_above_the_vocabulary_load_as_tokenizers_loads_them(tmp_path, rows, kind):
    """Added tokens listed in the vocabulary too (as Hugging Face writes them), with ids far
    above every token's (a model's ids 0..151,642, its special tokens from 160,255): they take
    no slot of the table, so the file loads (it was refused, 'ids may leave at most 1024
    unused', and fastbpe wrote such files itself) and encodes as ``tokenizers``."""
    from tests.formats.hf_files import trained_by_tokenizers

    data = trained_by_tokenizers(rows[::3], 600) if kind == "byte-level" else _layout(rows[::3], "normalizer")
    far = max(data["model"]["vocab"].values()) + 9000
    names = ["<|far|>", "<|farther|>"]
    data["added_tokens"] = [t for t in data.get("added_tokens") or [] if t["id"] < far] + [
        dict(id=far + k, content=name, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
        for k, name in enumerate(names)]
    data["model"]["vocab"].update({name: far + k for k, name in enumerate(names)})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_huggingface(path)
    assert tok.n_vocab == far + 2 and all(tok.special_tokens[name] == far + k for k, name in enumerate(names))
    for text in rows[:300] + [f"a{names[0]}b {names[1]}"]:
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, text
    tok.to_huggingface(tmp_path / "back.json")
    assert Tokenizer.from_huggingface(tmp_path / "back.json").encode(names[1], allowed_special="all") == [far + 1]


def test_a_decoder_fastbpe_does_not_decode_by_is_said_at_load(tmp_path, rows):
    """A file whose decoder tokenizers applies otherwise than fastbpe decodes (a Strip after
    ByteLevel, a Metaspace alone that leaves byte pieces as '<0xE7>', two spaces for a marker)
    loads with a warning naming its steps, ids unchanged; the decoders fastbpe follows (Llama's,
    Metaspace before ByteFallback, ByteLevel) and a file without one load silently."""
    import warnings

    from tests.formats.hf_files import trained_by_tokenizers

    def load(data, name):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        return Tokenizer.from_huggingface(path)

    byte_level = trained_by_tokenizers(rows[:300], 400)
    characters = _layout(rows[::4], "metaspace-split")
    metaspace = characters["decoder"]["decoders"][0]
    replace = {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}
    strip = {"type": "Strip", "content": " ", "start": 1, "stop": 0}
    said = [(byte_level, {"type": "Sequence", "decoders": [{"type": "ByteLevel"}, strip]}, "Sequence[ByteLevel, Strip]"),
            (characters, metaspace, "(Metaspace)"),
            (characters, {"type": "Sequence", "decoders": [{**replace, "content": "  "}, {"type": "ByteFallback"},
                                                           {"type": "Fuse"}]}, "Sequence[Replace, ByteFallback, Fuse]")]
    for k, (data, decoder, steps) in enumerate(said):
        with pytest.warns(UserWarning, match=re.escape(steps) + ".* is not one fastbpe decodes by"):
            tok = load({**data, "decoder": decoder}, f"said{k}")
        assert tok.encode("hello world") == load({**data, "decoder": None}, f"plain{k}").encode("hello world")
    silent = [(byte_level, {"type": "ByteLevel"}), (byte_level, None), (characters, characters["decoder"]),
              (characters, {"type": "Sequence", "decoders": [replace, {"type": "ByteFallback"}, {"type": "Fuse"},
                                                             strip]})]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, (data, decoder) in enumerate(silent):
            load({**data, "decoder": decoder}, f"silent{k}")


def test_a_metaspace_file_with_byte_pieces_is_written_with_a_decoder_that_decodes_them(metaspace_fallback_pair,
                                                                                    tmp_path):
    """Written back, a Metaspace file with byte fallback decodes in tokenizers as in fastbpe:
    its Metaspace decoder is followed by ByteFallback and Fuse (alone, it left '<0xE7>')."""
    hf, tok = metaspace_fallback_pair
    tok.to_huggingface(tmp_path / "back.json")
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "back.json"))
    for text in EDGE_CASES + ["hello 知 world", "ǅ ꙮ"]:
        ids = tok.encode_ordinary(text)
        assert back.decode(ids, skip_special_tokens=False) == tok.decode(ids) == hf.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_replace_decoder_alone_decodes_its_marker_as_a_space(tmp_path, rows, wrapped):
    """A file without byte pieces whose decoder is one ``Replace(▁, " ")``, bare or as a
    one-step Sequence, decodes every ▁ as a space, as tokenizers does, and loads silently."""
    import warnings

    data = _layout(rows[::4], "no-prefix", byte_fallback=False)
    replace = {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}
    data["decoder"] = {"type": "Sequence", "decoders": [replace]} if wrapped else replace
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = Tokenizer.from_huggingface(path)
    for text in rows[:200] + [" two  spaces ", "▁", ""]:
        ids = tok.encode_ordinary(text)
        assert ids == hf.encode(text, add_special_tokens=False).ids, text
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), text
