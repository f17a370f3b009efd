"""SentencePiece BPE ``.model`` files, trained by the sentencepiece library itself and compared
with it: ids, decoding, the models fastbpe refuses, and damaged files."""
import functools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbpe

spm = pytest.importorskip("sentencepiece", reason="sentencepiece (test extra) trains and verifies the models")

USER_DEFINED = ["<tool>", "</tool>", "ab", "abé", "s/", "<>", "\u3000<", "ｘ<", "▁<", "  ", "a b", "中क"]
# the options of the models fastbpe reads: Llama 2's (spaces kept as they are, digits split,
# whitespace-only pieces, control pieces of its own), SentencePiece's default spacing, and its
# defaults (the nmt_nfkc character map; without byte fallback, a run of characters without a
# piece is <unk>)
READ = {
    "llama2": dict(remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
                   control_symbols=["[INST]", "[/INST]"]),
    "spaces-collapsed": dict(),
    "no-dummy-prefix": dict(add_dummy_prefix=False, remove_extra_whitespaces=False),  # (Gemma's spacing)
    "defaults": dict(normalization_rule_name="nmt_nfkc", byte_fallback=False),
    "nmt_nfkc-byte-fallback": dict(normalization_rule_name="nmt_nfkc"),
    "no-byte-fallback": dict(byte_fallback=False, add_dummy_prefix=False, unk_surface="<?>"),  # (its own surface)
    # user-defined pieces (the trainer's user_defined_symbols; Gemma's models have them): ones
    # the text has often ("ab"), a longer one beside a shorter, ones the character map would
    # change (U+3000 is a space to nmt_nfkc, fullwidth ｘ an x), with spaces and with ▁
    "user-defined": dict(normalization_rule_name="nmt_nfkc", user_defined_symbols=USER_DEFINED),
    "user-defined-no-dummy-prefix": dict(add_dummy_prefix=False, remove_extra_whitespaces=False,
                                         user_defined_symbols=USER_DEFINED),
}
# and of the ones it refuses, with what it says
REFUSED = {
    "unigram": (dict(model_type="unigram"), "a SentencePiece Unigram model; fastbpe reads BPE models"),
    # (SentencePiece's default type, which its file then never names: a whole model, not one cut short)
    "unigram-by-default": (dict(model_type=None), r"a SentencePiece Unigram model; fastbpe reads BPE models \("),
}
ODD_TEXTS = ["", " ", "   ", " leading", "trailing  ", "two  spaces", "\t\n\r\n", "😀 𝔘 ꙮ missing characters",
             "▁ the marker", "▁", " ▁ ", "<s>control</s> [INST] text", "<unk>", "1234567 digits", "a\u0301",
             "\u3000\u00a0 other spaces", "ｆｕｌｌ ① ﬁ Å\u0301 ﾊﾟ", "\u00ad", " \u200b ", "😀😀 ꙮ😀", "\x00 nul"]


def _train(folder, rows, name, options) -> str:
    corpus = folder / "corpus.txt"
    if not corpus.exists():
        corpus.write_text("\n".join(rows) + "\n", encoding="utf-8")
    settings = dict(input=str(corpus), model_prefix=str(folder / name), vocab_size=1500, model_type="bpe",
                    normalization_rule_name="identity", byte_fallback=True, character_coverage=0.99,
                    minloglevel=2, num_threads=1)
    settings.update(options)
    spm.SentencePieceTrainer.train(**{key: value for key, value in settings.items() if value is not None})
    return str(folder / f"{name}.model")


@pytest.fixture(scope="module")
def rows(shared_data):
    return [cell for row in shared_data.rows("parallel_multi.tsv.gz", 400) for cell in row.rstrip("\n").split("\t")]


@pytest.fixture(scope="module")
def models(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("spm")
    return {name: _train(folder, rows, name, options) for name, options in READ.items()}


@pytest.fixture(scope="module", params=sorted(READ))
def pair(request, models):
    """``(sentencepiece's processor, fastbpe's tokenizer, the file)`` of one model."""
    path = models[request.param]
    return spm.SentencePieceProcessor(model_file=path), fastbpe.load(path), path


def test_ids_and_decoding_are_sentencepiece_s(pair, rows):
    processor, tok, _ = pair
    controls = [i for i in range(processor.get_piece_size()) if processor.is_control(i)]
    for text in rows + ODD_TEXTS + ["\n".join(rows[:50])]:
        ids = processor.encode(text)
        assert tok.encode_ordinary(text) == ids, text
        # (<unk> decodes as SentencePiece's surface, " ⁇ ")
        assert tok.decode(ids) == processor.decode(ids), text
        # with control pieces (BOS, EOS and the model's own), which decode as nothing
        framed = processor.encode(text, add_bos=True, add_eos=True) + controls
        assert tok.decode(framed) == processor.decode(framed), text
    # the characters without a piece took their path (byte fallback, or <unk> for a run of them)
    missing = processor.piece_to_id("<0xE4>") if tok.byte_fallback else processor.unk_id()
    assert sum(missing in processor.encode(t) for t in rows) > 10


def test_every_id_s_token_is_sentencepiece_s_piece(pair):
    """``id_to_token`` spells each id as ``id_to_piece`` does, byte pieces as ``<0xC5>`` (not
    the byte, which no str holds alone), and ``token_to_id`` takes it back; as ``get_vocab``."""
    processor, tok, _ = pair
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    assert [tok.id_to_token(i) for i in range(len(pieces))] == pieces
    assert [tok.token_to_id(piece) for piece in pieces] == list(range(len(pieces)))
    assert tok.get_vocab() == {piece: i for i, piece in enumerate(pieces)}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(list("ab é中कا😀𝔘 \t\n\r▁<>s/\u3000ｘ") + ["  ", "<s>", "<tool>", "＜tool＞"]),
                     max_size=30).map("".join))
def test_generated_text_encodes_as_sentencepiece(pair, text):
    processor, tok, _ = pair
    assert tok.encode_ordinary(text) == processor.encode(text)


@functools.lru_cache(maxsize=None)
def _kinds_of_piece(path):
    """``(marked, alone, odd, plain, controls)``: ids of pieces that begin with ▁ (40 of them),
    of ▁ alone or repeated, of control, unknown, byte and user-defined pieces, the last 20 ids,
    the control pieces. Read once a model (each example of a test would read them all again)."""
    processor = spm.SentencePieceProcessor(model_file=path)
    size = processor.get_piece_size()
    marked = [i for i in range(size) if processor.id_to_piece(i).startswith("▁")][:40]
    alone = [i for i in range(size) if processor.id_to_piece(i).strip("▁") == ""]
    odd = [i for i in range(size) if processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i)
           or processor.id_to_piece(i) in USER_DEFINED or processor.id_to_piece(i) == "▁<"]
    plain = list(range(size - 20, size))
    controls = [i for i in range(size) if processor.is_control(i)]
    return marked, alone, odd, plain, controls


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_ids_decode_as_sentencepiece_decodes_them(pair, data):
    """Ids no text encodes to, as a model generates them: pieces of ▁ alone or in a row at the
    start, control pieces before them, <unk> or a byte piece first, user-defined pieces that
    begin with ▁, byte pieces that spell no character (a U+FFFD for each byte that begins
    none), a ▁ spelled by byte pieces (no space marker: it stays ▁), control pieces inside a
    run of byte pieces (which end the run); each decodes to SentencePiece's text, as a list,
    an array and an iterator."""
    import numpy as np

    processor, tok, path = pair
    marked, alone, odd, plain, controls = _kinds_of_piece(path)
    # bytes that begin, continue and end characters, or never occur in UTF-8 (a surrogate's ED A0)
    odd_bytes = (0x41, 0x20, 0x80, 0x96, 0xA0, 0xBF, 0xC0, 0xC3, 0xA9, 0xE2, 0xED, 0xF0, 0x9F, 0x98)
    spelled = [processor.piece_to_id(f"<0x{b:02X}>") for b in odd_bytes] if tok.byte_fallback else []
    start = data.draw(st.lists(st.sampled_from(alone + controls), max_size=4))  # (where the rules differ)
    singles = st.sampled_from(marked + alone + odd[:60] + plain + spelled * 3).map(lambda i: [i])
    # a ▁ and an é spelled by byte pieces, whole and with control pieces inside (which end
    # SentencePiece's run of bytes: each part is decoded on its own)
    runs = []
    for run in ("▁".encode(), "é".encode()) if tok.byte_fallback else ():
        pieces = [processor.piece_to_id(f"<0x{b:02X}>") for b in run]
        runs += [pieces, sum(([i] + data.draw(st.lists(st.sampled_from(controls), max_size=2)) for i in pieces), [])]
    parts = data.draw(st.lists(st.one_of(singles, st.sampled_from(runs)) if runs else singles, max_size=8))
    ids = start + [i for part in parts for i in part]
    want = processor.decode(ids)
    assert tok.decode(ids) == want, [processor.id_to_piece(i) for i in ids]
    assert tok.decode(np.array(ids, dtype=np.int64)) == want and tok.decode(iter(ids)) == want


def test_a_batch_is_sentencepiece_s_ids_of_each_text(pair, rows):
    """encode_ordinary_batch (one compiled call a group of texts, byte fallback placed after)
    gives each text's ids, on one thread and on two, as lists and as arrays."""
    processor, tok, _ = pair
    texts = rows[:500] + ODD_TEXTS
    want = [processor.encode(text) for text in texts]
    for workers in (1, 2):
        assert tok.encode_ordinary_batch(texts, num_threads=workers) == want
        got = tok.encode_ordinary_batch(texts, num_threads=workers, as_numpy=True)
        assert [ids.tolist() for ids in got] == want


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=30), surrogate=st.sampled_from(["", "\ud800", "\udfff"]))
def test_the_one_call_path_is_the_general_one(pair, text, surrogate):
    """encode's one compiled call (BPECore.encode_chars: symbols, merges, the fallback's UTF-8
    bytes of 1 to 4 bytes and of lone surrogates) gives what the general path gives (which
    splits out user-defined pieces)."""
    _, tok, _ = pair
    text += surrogate
    general = tok._encode_with_sets(text, *tok._ordinary_sets()).tolist()
    assert tok.encode_ordinary(text) == general
    assert tok.encode_to_numpy(text, disallowed_special=()).tolist() == general


def test_the_one_call_checks_its_tables(pair):
    import numpy as np

    _, tok, _ = pair
    core, state = tok._core(), tok._state()
    with pytest.raises(ValueError, match="one entry per code point"):
        core.encode_chars("a", np.zeros(10, np.int32), np.zeros(256, np.int32), state)
    with pytest.raises(ValueError, match="256 entries, or none"):
        core.encode_chars("a", tok._char_ids(), np.zeros(3, np.int32), state)
    assert core.encode_chars("😀", tok._char_ids(), np.zeros(0, np.int32), state) is None  # (no fallback)
    # frozen spans (a user-defined piece's characters as its one id) in order, apart, in the text
    for frozen in ([0, 1], [0, 2, 5, 1, 3, 5], [1, 1, 5], [0, 9, 5], [0, 1, len(tok.token_bytes)], [0, 1, -1]):
        with pytest.raises(ValueError, match="frozen"):
            core.encode_chars("abcd", tok._char_ids(), np.zeros(0, np.int32), state, frozen=np.array(frozen))
    unfrozen = core.encode_chars("abcd", tok._char_ids(), np.zeros(0, np.int32), state, frozen=np.zeros(0, np.int64))
    assert unfrozen is None or unfrozen.tolist() == core.encode_chars("abcd", tok._char_ids(), np.zeros(0, np.int32),
                                                                      state).tolist()


def test_every_file_format_keeps_the_ids(pair, rows, tmp_path):
    """Loaded by name, by Tokenizer.from_sentencepiece, and written as fastbpe's file and as a
    tokenizer.json, which tokenizers encodes the same (splitting control pieces' text out, as
    ``allowed_special="all"`` does)."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) reads the written file")
    processor, tok, path = pair
    tok.save(tmp_path / "native.json")
    loaded = [fastbpe.load(tmp_path / "native.json"), fastbpe.Tokenizer.from_sentencepiece(path)]
    hf = None
    if "user_defined_symbols" in tok.normalizer[0]:  # (tokenizers finds added tokens before normalising)
        with pytest.raises(ValueError, match="user-defined piece"):
            tok.to_huggingface(tmp_path / "tokenizer.json")
    elif tok.normalizer[0]["precompiled_charsmap"]:  # (tokenizers applies the map otherwise: refused)
        with pytest.raises(ValueError, match="a character map cannot be written to tokenizer.json"):
            tok.to_huggingface(tmp_path / "tokenizer.json")
    else:
        tok.to_huggingface(tmp_path / "tokenizer.json")
        hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
        loaded.append(fastbpe.load(tmp_path / "tokenizer.json"))
    # fastbpe's file and a pickle keep SentencePiece's decoding (the ▁ at the start, byte pieces)
    import pickle

    kept = [loaded[0], pickle.loads(pickle.dumps(tok))]
    assert [(t.markers.dummy_prefix, t.fallback_replacement) for t in kept] == \
        [(tok.markers.dummy_prefix, "byte")] * 2 and tok.markers.dummy_prefix in ("piece", "pieces", False)
    if tok.byte_fallback:
        ids = [processor.piece_to_id("▁")] * 2 + [processor.piece_to_id(f"<0x{b:02X}>") for b in (0xE2, 0x96, 0x41)]
        assert [t.decode(ids) for t in kept] == [processor.decode(ids)] * 2
    for text in rows[:300] + ODD_TEXTS:
        ids = processor.encode(text)
        assert [t.encode_ordinary(text) for t in loaded] == [ids] * len(loaded), text
        if hf is not None:
            assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text, allowed_special="all"), text


def test_control_pieces_are_special_tokens(pair):
    processor, tok, _ = pair
    assert tok.special_tokens["<s>"] == processor.bos_id() and tok.special_tokens["</s>"] == processor.eos_id()
    assert tok.special_tokens["<unk>"] == processor.unk_id()
    assert tok.encode("<s>", allowed_special="all") == [processor.bos_id()]
    with pytest.raises(ValueError, match="special token"):
        tok.encode("<s>")


def test_trace_of_a_word_is_the_encoder_s(pair):
    """A word traced merge by merge (characters, merges by rank, byte fallback last) ends in
    SentencePiece's ids."""
    from fastbpe.analysis.trace import trace_word

    processor, tok, _ = pair
    for word in ["hello world", "😀 𝔘 missing", "  two  spaces ", "12345", "about <tool>ab s/abé ＜tool＞"]:
        chunks = trace_word(tok, word)
        assert [i for chunk in chunks for i in chunk["ids"]] == processor.encode(word), word
    assert any(chunk["steps"] for chunk in trace_word(tok, "hello world"))


@pytest.mark.parametrize("documents", ["line", "blank-line", "file"])
def test_encode_files_encodes_each_document_whole(pair, rows, tmp_path, documents):
    """A normaliser of steps (the ▁ put before the text) runs on each whole document, as
    SentencePiece's encode of it: the shards hold its ids, documents apart."""
    import json

    import numpy as np

    processor, tok, _ = pair
    docs = [" ".join(rows[k:k + 3]) for k in range(0, 240, 3)]
    path = tmp_path / "docs.txt"
    separator = {"line": "\n", "blank-line": "\n\n", "file": ""}[documents]
    path.write_text(separator.join(docs) if separator else docs[0], encoding="utf-8")
    docs = docs if separator else docs[:1]
    out = tmp_path / "shards"
    fastbpe.encode_files(tok, [path], out, documents=documents, separator="</s>", block_size=300, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    ids = np.concatenate([fastbpe.read_shard(out / shard["file"]) for shard in manifest["shards"]]).tolist()
    expected = []
    for k, doc in enumerate(docs):
        expected += ([processor.eos_id()] if k else []) + processor.encode(doc)
    assert ids == expected


def test_the_command_line_takes_a_model_file(pair, rows, tmp_path, capsys):
    from fastbpe.cli import main

    _, tok, path = pair
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(rows[:100]), encoding="utf-8")
    assert main(["audit", "-t", path, "--corpus", str(corpus), "--no-digits"]) == 0
    if len(tok.encode("\n")) == 1:  # (no ▁ before the text: a newline is its byte's token)
        assert main(["audit", "-t", path, "--corpus", str(corpus), "--digits-up-to", "999"]) == 0
    else:  # (the audit says why it has no digit splits, and goes on)
        assert main(["audit", "-t", path, "--corpus", str(corpus)]) == 0
        # (2: ▁ and the newline; 0: nmt_nfkc makes it a space, and spaces at the ends go)
        assert re.search("digit splits not measured: .*a newline that is one token alone; this tokenizer encodes it "
                         "as [02] ", capsys.readouterr().out)
    assert main(["encode", str(corpus), "-t", path, "--out", str(tmp_path / "out"), "--documents", "line",
                 "--separator", "</s>"]) == 0


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_models_fastbpe_cannot_reproduce_are_refused_by_name(tmp_path, rows, name):
    options, message = REFUSED[name]
    path = _train(tmp_path, rows[:1500], name, options)
    with pytest.raises(ValueError, match=message):
        fastbpe.load(path)


def test_a_model_cut_before_its_trainer_spec_is_said_to_be_cut_short(models, tmp_path):
    """A model's pieces come first: cut after them, it names no model type, which SentencePiece
    reads as Unigram; the error says the file may be cut short."""
    model, at = Path(models["llama2"]).read_bytes(), 0
    while model[at] == 0x0A:  # (field 1, a piece: a tag byte, a varint length, the piece)
        length, shift, at = 0, 0, at + 1
        while True:
            length |= (model[at] & 0x7F) << shift
            shift, at = shift + 7, at + 1
            if model[at - 1] < 0x80:
                break
        at += length
    (tmp_path / "cut.model").write_bytes(model[:at])
    with pytest.raises(ValueError, match=r"Unigram model \(it names no model type, nor has a trainer spec: is the file "
                                         r"cut short\?\)"):
        fastbpe.load(tmp_path / "cut.model")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_files_are_value_errors(models, tmp_path_factory, data):
    """A model cut short, or with bytes changed anywhere (its character map too): a tokenizer
    that encodes or a ValueError, never another exception."""
    model = Path(models[data.draw(st.sampled_from(["llama2", "defaults"]))]).read_bytes()
    at = data.draw(st.integers(0, len(model) - 1))
    damage = data.draw(st.sampled_from(["cut", "byte", "insert"]))
    value = bytes([data.draw(st.integers(0, 255))])
    damaged = {"cut": model[:at], "byte": model[:at] + value + model[at + 1:],
               "insert": model[:at] + value + model[at:]}[damage]
    path = tmp_path_factory.mktemp("damaged") / "tokenizer.model"
    path.write_bytes(damaged)
    try:
        fastbpe.load(path).encode_ordinary(ODD_TEXTS[-5] + " the cat")
    except ValueError:
        pass


@pytest.mark.parametrize("name", ["user-defined", "user-defined-no-dummy-prefix"])
def test_user_defined_pieces_are_found_in_the_normalised_text_and_never_merged(models, name, tmp_path):
    """A user-defined piece is SentencePiece's: kept as it is by the character map where one
    begins (ｘ< stays, \\u3000< is not a space), found in the normalised text, the longest
    first (＜tool＞ becomes <tool> under nmt_nfkc), in every call, never merged with its
    neighbours, and never one with a space in it (the normalised text has ▁ there). encode,
    the batch calls, encode_files and a trace give SentencePiece's ids; the file keeps them."""
    import pickle

    import numpy as np

    processor, tok = spm.SentencePieceProcessor(model_file=models[name]), fastbpe.load(models[name])
    texts = ["ｘ<ｘ< \u3000<x", "＜tool＞ <tool></tool>", "abé abc ab", "s/s//", " ▁<  a b ", "x<>ab</tool>",
             "中क中कab"]
    for text in texts:
        ids = processor.encode(text)
        assert tok.encode(text) == tok.encode_ordinary(text) == tok.encode(text, disallowed_special=()) == ids, text
        assert tok.encode_to_numpy(text).tolist() == ids
    ids = processor.encode("abé")
    assert ids == [processor.piece_to_id("abé")] if name == "user-defined-no-dummy-prefix" else ids[-1:] == \
        [processor.piece_to_id("abé")]
    assert tok.encode_ordinary_batch(texts * 30, num_threads=2) == [processor.encode(t) for t in texts * 30]
    tok.save(tmp_path / "native.json")
    assert [fastbpe.load(tmp_path / "native.json").encode(t) for t in texts] == [processor.encode(t) for t in texts]
    assert [pickle.loads(pickle.dumps(tok)).encode(t) for t in texts] == [processor.encode(t) for t in texts]
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(texts), encoding="utf-8")
    for documents, docs in (("line", texts), ("file", ["\n".join(texts)])):
        out = tmp_path / documents
        fastbpe.encode_files(tok, [path], out, documents=documents, separator=None, progress=False)
        shards = sorted(out.glob("*.npy"))
        assert np.concatenate([np.load(f) for f in shards]).tolist() == [i for d in docs for i in processor.encode(d)]
