"""Mistral's tekken files, made here from OpenAI's cl100k ranks (cut short, as tekken files
are) and compared with tiktoken given the same ranks and pattern, the ids shifted past the
special tokens, as mistral_common's Tekkenizer encodes."""
import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) is the reference encoder")
pytest.importorskip("tiktoken.load", reason="tiktoken (test extra) reads the rank file")

# Mistral's published split pattern (tekken.json's config.pattern): o200k's without the
# contractions, one digit a chunk
PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
           r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
           r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = 1000  # default_num_special_tokens
USED = 30000  # ranked tokens the model uses (default_vocab_size - SPECIALS); the file holds more
EDGES = ["", " ", "[INST] hello [/INST]", "<s>x</s>", "<SPECIAL_25>", "\n\n\r\n 12345 ٣٤ 1/2", "😀👍🏽 ",
         "a\u0301 Ünïcode", "don't SHOUT'S", "x" * 3000, "\t\t  \n"]


@pytest.fixture(scope="module")
def ranks(shared_data):
    import tiktoken.load
    ranked = tiktoken.load.load_tiktoken_bpe(str(shared_data.path("tokenizers", "tiktoken", "cl100k_base.tiktoken")))
    return sorted(ranked, key=ranked.get)[:USED + 5000]  # tokens in rank order


def _tekken(ranks, special_tokens=None, version="v3", vocab_size=SPECIALS + USED):
    vocab = [{"rank": k, "token_bytes": base64.b64encode(t).decode(), "token_str": None} for k, t in enumerate(ranks)]
    data = {"config": {"pattern": PATTERN, "num_vocab_tokens": len(ranks), "default_vocab_size": vocab_size,
                       "default_num_special_tokens": SPECIALS, "version": version}, "vocab": vocab}
    if special_tokens is not None:
        data["special_tokens"] = [{"rank": k, "token_str": t, "is_control": True} for k, t in enumerate(special_tokens)]
    return data


@pytest.fixture(scope="module")
def pair(ranks, tmp_path_factory):
    """(fastbpe's tokenizer of a tekken file, tiktoken with its ranks)."""
    path = tmp_path_factory.mktemp("tekken") / "tekken.json"
    path.write_text(json.dumps(_tekken(ranks)), encoding="utf-8")
    reference = tiktoken.Encoding("tekken", pat_str=PATTERN, special_tokens={},
                                  mergeable_ranks={t: k for k, t in enumerate(ranks[:USED])})
    return fastbpe.load(path), reference


def _expected(reference, text):
    return [i + SPECIALS for i in reference.encode_ordinary(text)]


def test_a_tekken_file_encodes_as_tekkenizer(pair, shared_data):
    tok, reference = pair
    assert PATTERN == fastbpe.PATTERNS["tekken"]  # (the published text: split by the compiled scanner)
    texts = [cell for row in shared_data.rows("parallel_multi.tsv.gz", 150) for cell in row.split("\t")]
    for text in texts + EDGES + ["".join(texts)]:
        ids = tok.encode_ordinary(text)
        assert ids == _expected(reference, text), text
        assert tok.decode(ids) == text
    assert tok.n_vocab == SPECIALS + USED
    # the special tokens of a file that lists none: mistral_common's twenty names, then fillers
    assert tok.encode("<s>[INST]", allowed_special="all") == [1, 3]
    assert tok.encode("<SPECIAL_25><SPECIAL_999>", allowed_special="all") == [25, 999]
    assert tok.decode([1, 3, 25]) == "<s>[INST]<SPECIAL_25>"


# (characters this Python's Unicode assigns: tiktoken's regex engine knows Unicode 16, fastbpe's
# scanners 18, and a letter assigned since, such as U+18D80, splits otherwise, as the README says)
@settings(max_examples=100, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs", "Cn")), max_size=40))
def test_any_text_encodes_as_tekkenizer(pair, text):
    tok, reference = pair
    assert tok.encode_ordinary(text) == _expected(reference, text)


def test_the_special_tokens_a_file_lists_take_the_first_ids(ranks, tmp_path):
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_tekken(ranks, ["<unk>", "<s>", "</s>", "[THINK]"], version="v13")), encoding="utf-8")
    tok = fastbpe.load(path)
    assert tok.encode("[THINK]x<SPECIAL_4>", allowed_special="all") == [3, tok.encode_ordinary("x")[0], 4]
    assert tok.encode_ordinary("[THINK]") == tok.encode_ordinary("[") + tok.encode_ordinary("THINK]")
    assert len(tok.special_tokens) == SPECIALS


@pytest.mark.parametrize("change,message", [
    (lambda d: d["vocab"][7].update(rank=8), r"vocab entry 7 is not \{\"rank\": 7"),
    (lambda d: d["vocab"][7].update(token_bytes="@@"), "vocab entry 7's token_bytes is not base64"),
    (lambda d: d["config"].update(default_vocab_size=SPECIALS + 301), "default_vocab_size 1301 must lie above"),
    (lambda d: d["config"].update(default_num_special_tokens="1000"), "'default_num_special_tokens' must be int"),
    (lambda d: d.update(special_tokens=[{"rank": k, "token_str": f"<t{k}>"} for k in range(SPECIALS + 1)]),
     "1001 special tokens, default_num_special_tokens is 1000"),
    (lambda d: d["config"].update(default_num_special_tokens=10, default_vocab_size=310),
     "20 special tokens, default_num_special_tokens is 10"),
    (lambda d: d["config"].update(default_vocab_size=SPECIALS), "default_vocab_size 1000 must lie above"),
    (lambda d: d["config"].update(pattern="(["), "tekken.json: invalid split pattern"),
    (lambda d: d["vocab"][300 - 1].update(token_bytes=""), "vocab entry 299 is an empty token"),
    (lambda d: d.update(special_tokens=[{"rank": 0, "token_str": "<s>"}, {"rank": 1, "token_str": "<s>"}]),
     "special token '<s>' is listed twice"),
    (lambda d: d["config"].update(version="v11"), "a tekken file of version 'v11' lists its special_tokens"),
    (lambda d: [e.update(token_bytes=base64.b64encode(b"\xff\xfe\xfd").decode()) for e in d["vocab"]
                if e["token_bytes"] == base64.b64encode(b"A").decode()], "byte 0x41 has no token"),
])
def test_a_file_that_does_not_hold_together_is_refused_naming_it(ranks, tmp_path, change, message):
    data = _tekken(ranks[:300], vocab_size=SPECIALS + 300)
    change(data)
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as caught:
        fastbpe.load(path)
    assert str(path) in str(caught.value)
