"""Long pieces by backtracking over the vocabulary (backtrack.h): exactly the ids of the merge
loops and of the references, for every shipped kind of model that allows it; the models that
do not fall back to the merge loops.

The generated-model comparisons (backtracking beside the scan, the heap and the rank queue
against the references, every merge rule) are in test_encode.py (``IMPLS``,
``_long_piece_encoders``); here: real vocabularies against tiktoken, the fallback, threads.
"""
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import Tokenizer
from fastbpe._core.encode import BPECore
from fastbpe.reference.encode import encode_by_token_rank

BYTES = [bytes([b]) for b in range(256)]
OPENAI = ["cl100k_base", "o200k_base", "r50k_base"]


def encode_piece(tok, piece: bytes, backtrack: bool):
    """Ids of ``piece`` as one chunk, by backtracking or by the rank queue."""
    core = tok._core()
    core.backtrack_min = 0 if backtrack else 1 << 40
    core.backtrack_budget = 0 if backtrack else -1
    try:
        ids = tok.encode_chunk_bounds(piece, np.array([0]), np.array([len(piece)])).tolist()
    finally:
        core.backtrack_min, core.backtrack_budget = 256, -1
    if backtrack:  # (the ids alone would not show a broken table: the loops take what the search gives up)
        assert core.backtracking()["fallbacks"] == 0
    return ids


def long_pieces(seed: int, n: int):
    """Pieces of n bytes: one letter, short patterns, random letters, digits, random bytes
    (invalid UTF-8 among them), non-ASCII text, and spaces and rules of code, whose tokens are
    the longest of the OpenAI vocabularies (65 to 128 bytes)."""
    rng = np.random.default_rng(seed)
    text = "".join(rng.choice(list("abcéüж中文😀"), n // 3))
    return {
        "one letter": b"a" * n,
        "pattern ab": (b"ab" * n)[:n],
        "pattern aab": (b"aab" * n)[:n],
        "random letters": bytes(rng.choice(np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", np.uint8), n)),
        "two letters, runs": bytes(rng.choice([97, 97, 97, 98], n).astype(np.uint8)),
        "digits": bytes(rng.integers(48, 58, n).astype(np.uint8)),
        "random bytes": rng.integers(0, 256, n).astype(np.uint8).tobytes(),
        "non-ASCII": text.encode("utf-8")[:n],
        "spaces": b" " * n,
        "rules": ((b"//" + b"-" * 112 + b"\n/*" + b"*" * 95 + b" " * 100) * (n // 300 + 1))[:n],
    }


@pytest.fixture(scope="module")
def openai_tokenizers(shared_data):
    folder = shared_data.path("tokenizers", "tiktoken")
    return {name: fastbpe.openai(name, folder / f"{name}.tiktoken") for name in OPENAI}


@pytest.mark.parametrize("name", OPENAI)
def test_openai_encodings_backtrack_and_equal_tiktoken(openai_tokenizers, tiktoken_encoding, name):
    """10-40 KB pieces: backtracking, the rank queue and tiktoken's BPE of one piece agree."""
    tok = openai_tokenizers[name]
    info = tok._core().backtracking()
    assert info["usable"], info
    assert info["non_monotone"] == 0 and info["trie_nodes"] > len(BYTES)
    enc = tiktoken_encoding(name)
    single_piece = getattr(enc, "_encode_single_piece", None)
    for size, seed in [(10_000, 1), (40_000, 2)]:
        for kind, piece in long_pieces(seed, size).items():
            fast = encode_piece(tok, piece, backtrack=True)
            assert fast == encode_piece(tok, piece, backtrack=False), (kind, size)
            assert tok.decode_bytes(fast) == piece
            if single_piece is not None:  # (tiktoken's piece encoder is not public API)
                assert fast == single_piece(piece), (kind, size)


def test_long_text_through_the_public_entry_points(openai_tokenizers, tiktoken_encoding):
    """A text with a 300 KB word among ordinary words: encode and encode_to_numpy (which cut it
    into chunks first) equal tiktoken."""
    tok = openai_tokenizers["cl100k_base"]
    enc = tiktoken_encoding("cl100k_base")
    rng = np.random.default_rng(3)
    word = "".join(rng.choice(list("abcdefgh"), 300_000))
    text = f"Hello world, {word} and 12345 more {'x' * 5000}!"
    expected = enc.encode_ordinary(text)
    assert tok.encode_to_numpy(text).tolist() == expected
    assert tok.encode(text, disallowed_special=()) == expected


def test_huggingface_byte_level_files(shared_data):
    """The pair rule of Hugging Face files: GPT-2's encoder.json and vocab.bpe allow backtracking
    and agree with the rank queue; a model that does not allow it still encodes exactly."""
    tok = fastbpe.load(shared_data.path("tokenizers", "encoder.json"))
    info = tok._core().backtracking()
    assert info["usable"], info
    for kind, piece in long_pieces(4, 20_000).items():
        assert encode_piece(tok, piece, True) == encode_piece(tok, piece, False), kind


def _reference_token_rule(tokens, word):
    ranks = {t: i for i, t in enumerate(tokens)}
    return [ranks[t] for t in encode_by_token_rank(word, ranks, False)]


def test_a_merge_below_its_parts_falls_back():
    """tiktoken's rule with "abc" ranked below "ab": BPE of "abc" merges a+b first (the only
    pair), then ab+c at the lower rank. Backtracking assumes ranks only go up, so this model is
    merged by the loops, and the ids stay exact."""
    tokens = BYTES + [b"abc", b"ab"]
    tok = Tokenizer(tokens, [], merge_rule="token")
    info = tok._core().backtracking()
    assert not info["usable"] and info["non_monotone"] == 1
    piece = b"abcab" * 100
    assert encode_piece(tok, piece, True) == _reference_token_rule(tokens, piece)


def test_replayed_repeated_merge_falls_back():
    """The replay rule with a pair merged twice (a duplicate merge re-created a token): the floor
    decides which rank applies, which backtracking cannot see, so the loops merge."""
    tokens = BYTES + [b"aa", b"aaa"]
    a = ord("a")
    merges = [(a, a), (a, 256), (a, a)]
    tok = Tokenizer(tokens, merges)
    assert tok._core().backtracking()["replay_repeats"]
    assert not tok._core().backtracking()["usable"]
    piece = b"a" * 301
    assert encode_piece(tok, piece, True) == encode_piece(tok, piece, False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(min_size=2, max_size=5).map(lambda b: bytes(97 + x % 3 for x in b)), max_size=30,
                unique=True), st.binary(min_size=1, max_size=400).map(lambda b: bytes(97 + x % 3 for x in b)))
def test_token_rule_vocabularies_of_any_order(extra, word):
    """tiktoken's rule on vocabularies of any rank order (many not reachable, some not
    monotone): backtracking where allowed, the loops otherwise, equal to the reference."""
    tokens = BYTES + [t for t in extra]
    tok = Tokenizer(tokens, [], merge_rule="token")
    assert encode_piece(tok, word, True) == _reference_token_rule(tokens, word)


def _vocabulary_of_every_width():
    """Bytes, then prefixes followed by 1 to 256 different bytes (the trie keeps up to six
    children's bytes in their parent, more in a table of their own), two and three bytes deep,
    and a chain of single children; every token reachable and added after its prefixes."""
    order = np.random.default_rng(7).permutation(256).tolist()  # (0 and 255 only in wide nodes)
    tokens = list(BYTES)
    for k, width in enumerate([1, 2, 5, 6, 7, 8, 40, 255, 256]):
        two = b"Q" + bytes([48 + k])  # (no token of two bytes starts with a child's byte)
        three = b"Z" + bytes([48 + k]) + b"z"
        tokens += [two, three[:2], three]
        tokens += [two + bytes([c]) for c in order[:width]]
        tokens += [three + bytes([c]) for c in order[-width:]]
    tokens += [b"Z0z" + bytes([order[-1]]) + b"chain"[:i] for i in range(1, 6)]
    return tokens


@pytest.mark.parametrize("seed", range(4))
def test_trie_nodes_of_every_width(seed):
    """Pieces made of those tokens, their neighbours and random bytes: backtracking equals the
    reference, and the trie has one node per prefix of three bytes or more."""
    tokens = _vocabulary_of_every_width()
    tok = Tokenizer(tokens, [], merge_rule="token")
    info = tok._core().backtracking()
    assert info["usable"], info
    assert info["trie_nodes"] == 257 + 65536 + len({t[:i] for t in tokens for i in range(3, len(t) + 1)})
    rng = np.random.default_rng(seed)
    parts = [tokens[i] for i in rng.integers(256, len(tokens), 400)]
    # near misses: each token's proper prefix then a byte 0, 255 or any (the bytes of nodes of
    # fewer than six children are packed with zeros beside them)
    parts += [t[:-1] + bytes([int(x)]) for t in tokens[256::7] for x in (0, 255, rng.integers(0, 256))]
    parts += [bytes([int(b)]) for b in rng.integers(0, 256, 100)]
    piece = b"".join(parts[i] for i in rng.permutation(len(parts)))
    assert encode_piece(tok, piece, True) == _reference_token_rule(tokens, piece)


def test_tables_built_once_under_threads(shared_data):
    """The tables are built once the long chunks reach the budget, while other threads encode
    theirs by the merge loops; every thread gets the same ids as the loops alone."""
    tok = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken") / "r50k_base.tiktoken")
    tok._core().backtrack_budget = 120_000  # (reached by the third of the four chunks)
    rng = np.random.default_rng(5)
    texts = ["".join(rng.choice(list("abcdef"), 50_000)) for _ in range(4)]
    results = [None] * len(texts)

    def run(k):
        results[k] = tok.encode_to_numpy(texts[k]).tolist()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    core = tok._core()
    assert core.backtrack_built
    core.backtrack_min = 1 << 40
    try:
        assert results == [tok.encode_to_numpy(t).tolist() for t in texts]
    finally:
        core.backtrack_min = 256


def test_tables_wait_for_the_budget(shared_data):
    """The merge loops take long chunks until their bytes, the current chunk's included, reach
    the budget (by default twice the vocabulary's bytes); then the tables are built and used.
    The ids are the same all along; a chunk the 16-bit path hands on is counted once."""
    folder = shared_data.path("tokenizers", "tiktoken")
    tok = fastbpe.openai("r50k_base", folder / "r50k_base.tiktoken")
    core = tok._core()
    token_bytes = sum(len(t) for t in tok.token_bytes)
    assert core.backtrack_budget == 2 * token_bytes
    rng = np.random.default_rng(8)
    words = ["".join(rng.choice(list("abcdef"), n)) for n in (300, 5_000, 60_000)]
    ref = fastbpe.openai("r50k_base", folder / "r50k_base.tiktoken")  # (tok's chunk cache stays empty)
    loops = [encode_piece(ref, w.encode(), backtrack=False) for w in words]
    core.backtrack_budget = 65_300
    assert not core.backtrack_built
    for k in range(2):  # 300 + 5,000 bytes: below the budget
        assert tok.encode_to_numpy(words[k]).tolist() == loops[k]
        assert not core.backtrack_built
    assert tok.encode_to_numpy(words[2]).tolist() == loops[2]  # 65,300 bytes: the budget
    assert core.backtrack_built
    word = "".join(rng.choice(list("abcdef"), 400))  # (not in the chunk cache: backtracked)
    assert tok.encode_to_numpy(word).tolist() == encode_piece(ref, word.encode(), backtrack=False)

    from fastbpe._core.encode import EncodeState
    from fastbpe.encode.batch import _fused_pattern

    fresh = fastbpe.openai("r50k_base", folder / "r50k_base.tiktoken")
    core = fresh._core()
    core.backtrack_budget = 100_000
    data = ("".join(rng.choice(list("abcdef"), 70_000))).encode()
    u16 = core.encode_text_u16(data, _fused_pattern(fresh), EncodeState())
    assert u16.tolist() == encode_piece(ref, data, backtrack=False)
    assert not core.backtrack_built  # (70,000 bytes counted twice would pass 100,000)
    more = ("".join(rng.choice(list("abcdef"), 30_000))).encode()  # (counted once, it reaches it)
    assert core.encode_text_u16(more, _fused_pattern(fresh), EncodeState()).tolist() == \
        encode_piece(ref, more, backtrack=False)
    assert core.backtrack_built and core.backtracking()["fallbacks"] == 0
    assert core.backtrack_built


def test_backtrack_budget_is_checked():
    core = BPECore(BYTES, np.zeros(0, np.int32), np.zeros(0, np.int32))
    assert core.backtrack_budget == 2 * 256
    core.backtrack_budget = 7
    assert core.backtrack_budget == 7
    core.backtrack_budget = -1
    assert core.backtrack_budget == 2 * 256
    with pytest.raises(ValueError, match="backtrack_budget"):
        core.backtrack_budget = -2
    assert not core.backtrack_built
    core.backtracking()
    assert core.backtrack_built


def test_backtrack_min_is_checked():
    core = BPECore(BYTES, np.zeros(0, np.int32), np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="backtrack_min"):
        core.backtrack_min = -1
    assert core.backtracking()["usable"]  # bytes only: nothing to merge, trivially allowed


def test_huge_call_writes_its_result_in_place(openai_tokenizers):
    """A call whose ids could pass 64 MiB writes them straight into its result array (cut to
    size after): the same ids as the chunk path, from encode_to_numpy, encode_batch and bytes."""
    tok = openai_tokenizers["r50k_base"]
    text = "a" * 17_000_000 + " end"
    expected = encode_piece(tok, text[:-4].encode(), backtrack=False) + tok.encode(" end")
    ids = tok.encode_to_numpy(text)
    assert ids.tolist() == expected
    batch = tok.encode_batch([text, "hello"], workers=1, as_numpy=True)
    assert batch[0].tolist() == expected and batch[1].tolist() == tok.encode("hello")
    data = text.encode()
    assert tok.encode_chunk_bounds(data, np.array([0, len(data) - 4]), np.array([len(data) - 4, len(data)])).tolist() == expected
