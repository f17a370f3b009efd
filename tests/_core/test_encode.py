"""The compiled encoder (``fastbpe/_core/encode.pyx``) against its references: the three merge
rules of ``fastbpe.reference.encode`` and tiktoken itself, from bytes, from symbol ids and in the
one-pass split+merge (``encode_text``/``encode_str`` against the regex split); ``id_list``
against ``ndarray.tolist()``; round trips; batch and NumPy outputs."""
import functools
import gc
import os
import subprocess
import sys

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import PATTERNS
from fastbpe import reference
from fastbpe._core.encode import BPECore, EncodeState, NameFinder
from fastbpe.reference.encode import encode_by_pair_rank, encode_by_token_rank
from fastbpe import Tokenizer
from fastbpe.split.patterns import TABLE, fused_scanner_id

# the patterns the encoder splits itself (their chunks tile the text)
TILING_PATTERN_IDS = {name: entry.scanner for name, entry in TABLE.items() if entry.tiles}


BYTES = [bytes([b]) for b in range(256)]


@st.composite
def merge_lists(draw, alphabet=b"abc", max_merges=12):
    """Arbitrary merge lists over a small alphabet: any two existing tokens may merge, and a
    merge may re-create a token that exists (the trainer deduplicates; so do we)."""
    tokens = list(BYTES)
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    letters = [ids[bytes([c])] for c in alphabet]
    pool = list(letters)
    for _ in range(draw(st.integers(0, max_merges))):
        a = draw(st.sampled_from(pool))
        b = draw(st.sampled_from(pool))
        new = tokens[a] + tokens[b]
        if new not in ids:
            ids[new] = len(tokens)
            tokens.append(new)
            pool.append(ids[new])
        merges.append((a, b))
    return tokens, merges


def core_encode_word(tok: Tokenizer, word: bytes, impl: str = "scan"):
    """The compiled core on one chunk: from its bytes through the short-chunk scan, the heap,
    the rank queue of long chunks or backtracking (where the model allows it, else the heap),
    the token rule's merge over all substrings of a short chunk ("spans", up to 15 bytes; the
    scan above), or from its symbol ids (the path of character-level tokenizers and word
    markers; "symbols-ranks" through the rank queue)."""
    core = tok._core()
    core.short_token_max = 15 if impl == "spans" else 0
    core.scan_max = 32 if impl in ("scan", "symbols", "spans") else 0
    core.rank_queue_min = 0 if impl in ("ranks", "symbols-ranks") else 1 << 40
    core.backtrack_min = 0 if impl == "backtrack" else 1 << 40
    core.backtrack_budget = 0 if impl == "backtrack" else -1  # (the tables at the first chunk)
    if impl.startswith("symbols"):
        symbols = np.array([tok._ids[bytes([b])] for b in word], dtype=np.int32)
        return core.encode_symbols(symbols, np.array([len(word)], dtype=np.int64), EncodeState()).tolist()
    return tok.encode_chunk_bounds(word, np.array([0]), np.array([len(word)])).tolist()


IMPLS = ["scan", "heap", "ranks", "backtrack", "symbols", "symbols-ranks"]
BYTE_IMPLS = ["scan", "heap", "ranks", "backtrack"]


@settings(max_examples=300)
@given(merge_lists(), st.lists(st.binary(min_size=1, max_size=40).map(lambda b: bytes(97 + x % 3 for x in b)),
                               min_size=1, max_size=6))
def test_replay_equals_reference_on_arbitrary_merge_lists(case, words):
    tokens, merges = case
    tok = Tokenizer(tokens, merges)
    pairs = [(tokens[a], tokens[b]) for a, b in merges]
    for word in words:
        expected = [tok._ids[t] for t in reference.encode_word(tuple(bytes([b]) for b in word), pairs)]
        for impl in IMPLS:
            assert core_encode_word(tok, word, impl) == expected, impl


def test_chars_unit_replays_like_the_reference():
    tok = fastbpe.train("low lower lowest newer newest " * 20, num_merges=20, unit="chars",
                        pattern="whitespace", word_start="_", progress=False, min_frequency=1)
    merges = tok.merges
    for word in ["lowest", "newer", "low", "wider"]:
        expected = reference.encode_word(tuple("_" + word), merges)
        assert tok.tokens(word) == list(expected)


@settings(max_examples=300)
@given(merge_lists(), st.lists(st.binary(min_size=1, max_size=40).map(lambda b: bytes(97 + x % 3 for x in b)),
                               min_size=1, max_size=6))
def test_pair_rule_equals_reference(case, words):
    tokens, merges = case
    tok = Tokenizer(tokens, merges, merge_rule="pair")
    pairs = [(tokens[a], tokens[b]) for a, b in merges]
    for word in words:
        expected = [tok._ids[t] for t in encode_by_pair_rank(word, pairs)]
        for impl in IMPLS:
            assert core_encode_word(tok, word, impl) == expected, impl


@settings(max_examples=300)
@given(merge_lists(), st.lists(st.binary(min_size=1, max_size=40).map(lambda b: bytes(97 + x % 3 for x in b)),
                               min_size=1, max_size=6), st.booleans())
def test_token_rule_equals_reference(case, words, whole):
    tokens, _ = case
    tok = Tokenizer(tokens, [], merge_rule="token", whole_token_lookup=whole)
    ranks = {t: i for i, t in enumerate(tokens)}
    for word in words:
        expected = [ranks[t] for t in encode_by_token_rank(word, ranks, whole)]
        for impl in (IMPLS if not whole else BYTE_IMPLS) + ["spans"]:  # the symbol path has no whole-chunk lookup
            assert core_encode_word(tok, word, impl) == expected, impl


# Short chunks under the token rule (tiktoken's): merged from the ids of all their substrings,
# looked up at once, against the reference and the scan, on arbitrary bytes (NUL, non-ASCII,
# invalid UTF-8), vocabularies of runs and overlaps (ties: one token twice in a chunk), and a
# vocabulary without some single bytes (an error unless the whole chunk is a token).
@settings(max_examples=200, deadline=None)
@given(merge_lists(alphabet=b"a\x00\xe9\xff", max_merges=24),
       st.lists(st.binary(min_size=1, max_size=17).map(lambda b: bytes(b"a\x00\xe9\xff"[x % 4] for x in b)),
                min_size=1, max_size=8), st.sampled_from(["all", "consistent", "none"]), st.booleans())
def test_token_rule_short_chunks_merged_from_substrings(case, words, whole, drop_bytes):
    tokens, _ = case
    if drop_bytes:  # no single-byte token for 0xe9 and 0xff (their ids stay, unused)
        tokens = [b"" if t in (b"\xe9", b"\xff") else t for t in tokens]
    none = np.zeros(0, dtype=np.int32)
    core = BPECore(tokens, none, none, merge_rule="token", whole_token_lookup=whole)
    ranks = {t: i for i, t in enumerate(tokens) if t}
    for word in words:
        if whole == "all" and word in ranks:
            expected = [ranks[word]]
        elif any(bytes([b]) not in ranks for b in word):
            expected = ValueError
        else:
            expected = [ranks[t] for t in encode_by_token_rank(word, ranks, False)]
        for short_token_max in (15, 0):  # the substrings' merge, the scan
            core.short_token_max = short_token_max
            encode = lambda: core.encode_chunks(word, np.array([0]), np.array([len(word)]), EncodeState()).tolist()
            if expected is ValueError:
                with pytest.raises(ValueError):
                    encode()
            else:
                assert encode() == expected, (short_token_max, word)


def _by_spans_and_by_scan(core, chunks):
    """Each chunk encoded alone twice: from its substrings (merge_spans), then by the scan
    (short_token_max 0 turns merge_spans off)."""
    spans = _one_by_one(core, chunks)
    core.short_token_max = 0
    try:
        return spans, _one_by_one(core, chunks)
    finally:
        core.short_token_max = 15


def test_token_rule_short_chunks_on_a_real_vocabulary(shared_data, tiktoken_encoding):
    """cl100k on English text: every chunk encoded alone (no cache answers) from its
    substrings, by the scan and by tiktoken, one chunk of each length 1..16 bytes at least."""
    tok = fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    enc = tiktoken_encoding("cl100k_base")
    text = shared_data.text("english.txt.gz", 20_000)
    chunks = sorted({c.encode("utf-8") for c in regex.findall(enc._pat_str, text)})
    core = tok._core()
    spans, scanned = _by_spans_and_by_scan(core, chunks)
    assert {len(c) for c in chunks} >= set(range(1, 17))
    assert spans == scanned == [i for c in chunks for i in enc._encode_single_piece(c)]  # (tiktoken: one piece)


# The text path under the token rule: a chunk of 2..15 bytes that misses the short-chunk cache
# is first looked up whole among the short tokens (with the whole-chunk rule, "all"), before the
# chunk cache, and a token found so is not put in the chunk cache. Generated vocabularies over
# letters, a space and the two bytes of "é" (tokens that the merges alone would not rebuild from
# their bytes, so the whole lookup decides), texts of hundreds of chunks (several blocks, words
# again and again, words of 16 bytes and more), three passes with one state whose short cache is
# tiny (chunks fall out of it and take the whole lookup again) or full size.
@settings(max_examples=60, deadline=None)
@given(merge_lists(alphabet=b"ab \xc3\xa9", max_merges=30),
       st.lists(st.text(alphabet="abé", min_size=1, max_size=18), min_size=1, max_size=40),
       st.lists(st.integers(0, 39), min_size=1, max_size=600),
       st.sampled_from(["all", "consistent", "none"]), st.sampled_from([(1, 1), (16, 16)]))
def test_token_rule_text_path_whole_lookup_before_the_cache(case, words, picks, whole, bits):
    tokens, _ = case
    none = np.zeros(0, dtype=np.int32)
    core = BPECore(tokens, none, none, merge_rule="token", whole_token_lookup=whole)
    ranks = {t: i for i, t in enumerate(tokens)}
    text = "".join((" " if k % 3 else "") + words[k % len(words)] for k in picks)
    chunks = [c.encode("utf-8") for c in regex.findall(PATTERNS["cl100k"], text)]
    expected = [ranks[t] for c in chunks for t in encode_by_token_rank(c, ranks, whole == "all")]
    state = EncodeState(short_cache_bits=bits[0], short_cache_max_bits=bits[1])
    for _ in range(3):
        assert core.encode_text(text.encode("utf-8"), TILING_PATTERN_IDS["cl100k"], state).tolist() == expected
        assert core.encode_str(text, TILING_PATTERN_IDS["cl100k"], state).tolist() == expected
    lengths = np.array([len(c) for c in chunks], dtype=np.int64)
    ends = np.cumsum(lengths)
    assert core.encode_chunks(b"".join(chunks), ends - lengths, ends, state).tolist() == expected


def test_short_token_max_is_checked():
    core = Tokenizer(list(BYTES), [], merge_rule="token")._core()
    assert core.short_token_max == 15
    for bad in (-1, 16):
        with pytest.raises(ValueError, match="short_token_max"):
            core.short_token_max = bad


@settings(max_examples=100)
@given(merge_lists(alphabet=b"ab ", max_merges=20), st.text(alphabet="ab \n", max_size=60))
def test_token_rule_equals_tiktoken(case, text):
    tiktoken = pytest.importorskip("tiktoken")
    tokens, _ = case
    ranks = {t: i for i, t in enumerate(tokens)}
    pattern = r"\S+|\s+"
    enc = tiktoken.Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    tok = Tokenizer(tokens, [], merge_rule="token", whole_token_lookup=True, pattern=pattern)
    assert tok.encode(text) == enc.encode_ordinary(text)


def _converted_merges(tokens, order):
    """The merges of a rank-only vocabulary as a converter writes them into a pair-rule file
    (Llama 3's tokenizer.json, from tiktoken's ranks): every split of every token into two
    tokens, token by token in id order; a token's own splits in ``order(splits)``."""
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    for t in tokens:
        merges += order([(ids[t[:k]], ids[t[k:]]) for k in range(1, len(t)) if t[:k] in ids and t[k:] in ids])
    return merges


SPLIT_ORDERS = {"parts' ids": sorted, "reversed": lambda splits: sorted(splits, reverse=True)}


@settings(max_examples=200)
@given(merge_lists(alphabet=b"ab", max_merges=30), st.sampled_from(sorted(SPLIT_ORDERS) + ["shuffled"]),
       st.randoms(use_true_random=False), st.booleans(),
       st.lists(st.binary(min_size=1, max_size=20).map(lambda b: bytes(b"ab"[x % 2] for x in b)),
                min_size=1, max_size=8))
def test_pair_rule_with_converted_merges_takes_the_spans_exactly(case, order, rnd, whole, words):
    """A pair-rule model whose merges are every split of every token, ranked by token id (the
    ties inside a token in any order), merges short chunks from their substrings (spans_for_pairs)
    and still gives the pair rule's ids: chunks of two letters, where one token has overlapping
    splits ("aba" = "ab" + "a" = "a" + "ba") and several pairs make the same token at once."""
    tokens, _ = case
    shuffle = lambda splits: rnd.sample(splits, len(splits))
    merges = _converted_merges(tokens, SPLIT_ORDERS.get(order, shuffle))
    tok = Tokenizer(tokens, merges, merge_rule="pair", whole_token_lookup=whole)
    assert tok._core().spans_for_pairs
    pairs = [(tokens[a], tokens[b]) for a, b in merges]
    expected = [[tok._ids[t] for t in ([w] if whole and w in tok._ids else encode_by_pair_rank(w, pairs))]
                for w in words]
    for word, ids in zip(words, expected):
        for impl in ("heap", "scan", "spans"):
            assert core_encode_word(tok, word, impl) == ids, (impl, word)
    texts = [w.decode() for w in words]  # (letters only: one chunk each; the spans, through the caches)
    assert tok.encode_batch(texts + texts) == expected + expected


@settings(max_examples=200)
@given(merge_lists(alphabet=b"ab", max_merges=16), st.lists(
    st.binary(min_size=1, max_size=16).map(lambda b: bytes(b"ab"[x % 2] for x in b)), min_size=1, max_size=6))
def test_pair_rule_on_arbitrary_merge_lists_with_the_spans_allowed(case, words):
    """Arbitrary merge lists under the pair rule with the substrings' merge allowed: it is used
    only when the merges are the token rule's (spans_for_pairs), and the ids are the pair rule's
    whether it is or not."""
    tokens, merges = case
    tok = Tokenizer(tokens, merges, merge_rule="pair")
    pairs = [(tokens[a], tokens[b]) for a, b in merges]
    for word in words:
        assert core_encode_word(tok, word, "spans") == [tok._ids[t] for t in encode_by_pair_rank(word, pairs)], word


def test_spans_for_pairs_needs_every_split_and_the_token_order():
    """The pair rule takes the substrings' merge only when (1) every split of a token into two
    tokens is a merge and (2) the merges come in the order of the ids of the tokens they make."""
    tokens = BYTES + [b"ab", b"ba", b"aba"]
    a, b, ab, ba = 97, 98, 256, 257
    full = [(a, b), (b, a), (a, ba), (ab, a)]
    assert Tokenizer(tokens, full, merge_rule="pair")._core().spans_for_pairs
    assert not Tokenizer(tokens, full[:3], merge_rule="pair")._core().spans_for_pairs  # (ab, a) missing
    assert not Tokenizer(tokens, [(b, a), (a, b), (a, ba), (ab, a)], merge_rule="pair")._core().spans_for_pairs
    assert not Tokenizer(tokens, full, merge_rule="replay")._core().spans_for_pairs
    # a pair listed twice (its first rank does not count): declined, the ids the pair rule's
    twice = Tokenizer(tokens, [(a, b)] + full, merge_rule="pair")
    assert not twice._core().spans_for_pairs
    assert twice.encode("abab") == Tokenizer(tokens, full, merge_rule="pair").encode("abab")
    # "abab...": at every step two pairs may make "aba"; the rank of (a, ba) puts it first
    tok = Tokenizer(tokens, full, merge_rule="pair")
    pairs = [(tokens[x], tokens[y]) for x, y in full]
    for word in (b"aba", b"abab", b"ababa", b"ababab" * 2, b"abba", b"a" * 15):
        expected = [tok._ids[t] for t in encode_by_pair_rank(word, pairs)]
        assert core_encode_word(tok, word, "spans") == core_encode_word(tok, word, "scan") == expected, word


def test_llama3_short_chunks_by_the_spans_equal_the_pair_scan(shared_data):
    """Llama 3's tokenizer.json (merges converted from tiktoken's ranks) takes the substrings'
    merge: on the chunks of English text and of words with repeated parts (where two pairs make
    one token), each chunk alone, it gives the pair rule's ids (the scan) and tokenizers' ids."""
    tokenizers = pytest.importorskip("tokenizers")
    path = shared_data.path("tokenizers", "llama3", "tokenizer.json")
    tok = Tokenizer.from_huggingface(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    core = tok._core()
    assert core.spans_for_pairs
    text = shared_data.text("english.txt.gz", 20_000)
    odd = ["ababab", "atata", "erereree", "',',','", "\",\",\"", "2020202", "\x00\x00\x00", "ééé", "——–", "𝔘𝔘𝔘",
           " anana", "phpphp", "texttext", "elseelse", "=====", "0000000000"]
    chunks = sorted({c.encode("utf-8") for c in regex.findall(PATTERNS["llama3"], text + " ".join(odd))})
    spans, scanned = _by_spans_and_by_scan(core, chunks)
    assert {len(c) for c in chunks} >= set(range(1, 16))
    expected = [i for c in chunks for i in hf.encode(c.decode("utf-8"), add_special_tokens=False).ids]
    assert spans == scanned == expected


# Long pieces: the rank queue of long chunks (and its hand-over to the heap) against the
# references, on pieces of few letters (many ties and overlaps), with the length at the switch
# from the heap to the rank queue and just either side of it.
def _reference_ids(tok, rule, tokens, merges, word):
    if rule == "replay":
        return [tok._ids[t] for t in reference.encode_word(tuple(bytes([b]) for b in word),
                                                           [(tokens[a], tokens[b]) for a, b in merges])]
    if rule == "pair":
        return [tok._ids[t] for t in encode_by_pair_rank(word, [(tokens[a], tokens[b]) for a, b in merges])]
    ranks = {t: i for i, t in enumerate(tokens)}
    return [ranks[t] for t in encode_by_token_rank(word, ranks, False)]


def _long_piece_encoders(tok, n):
    """(label, encode) for the heap, the rank queue at the switch boundary n-1, n, n+1, the
    rank queue's hand-over to the heap and backtracking at its boundary, all on one chunk of n
    bytes."""
    core = tok._core()

    def run(queue_min, budget=4, symbols=False, backtrack_min=1 << 40):
        def encode(word):
            core.scan_max, core.rank_queue_min, core.rank_sort_budget = 0, queue_min, budget
            core.backtrack_min, core.backtrack_budget = backtrack_min, 0
            try:
                if symbols:
                    ids = np.array([tok._ids[bytes([b])] for b in word], dtype=np.int32)
                    return core.encode_symbols(ids, np.array([len(word)], dtype=np.int64), EncodeState()).tolist()
                return tok.encode_chunk_bounds(word, np.array([0]), np.array([len(word)])).tolist()
            finally:
                core.scan_max, core.rank_queue_min, core.rank_sort_budget = 32, 256, 4
                core.backtrack_min, core.backtrack_budget = 256, -1
        return encode

    return [("heap", run(n + 1)), ("queue at n-1", run(n - 1)), ("queue at n", run(n)),
            ("queue, hand-over", run(0, budget=0)), ("queue, symbols", run(0, symbols=True)),
            ("backtracking at n", run(n + 1, backtrack_min=n)), ("backtracking at n+1", run(n + 1, backtrack_min=n + 1))]


@settings(max_examples=60, deadline=None)
@given(merge_lists(alphabet=b"ab\xff", max_merges=16), st.sampled_from(["replay", "pair", "token"]),
       st.integers(33, 300), st.data())
def test_long_pieces_equal_reference(case, rule, n, data):
    """Pieces of 33 to 300 bytes over two letters and an invalid UTF-8 byte, every merge rule;
    arbitrary merge lists are not monotone, so new pairs of lower ranks interrupt the queue."""
    tokens, merges = case
    tok = Tokenizer(tokens, merges if rule != "token" else [], merge_rule=rule, whole_token_lookup=False)
    unit = data.draw(st.sampled_from([b"a", b"ab", b"aab", b"ab\xff", b"abba"]))
    noise = data.draw(st.lists(st.integers(0, n - 1), max_size=4))
    word = bytearray((unit * n)[:n])
    for i in noise:
        word[i] = data.draw(st.sampled_from(b"ab\xff"))
    word = bytes(word)
    expected = _reference_ids(tok, rule, tokens, merges, word)
    for label, encode in _long_piece_encoders(tok, n):
        assert encode(word) == expected, label


@pytest.mark.parametrize("rule", ["replay", "pair", "token"])
def test_tens_of_kilobytes_agree_across_merge_loops(rule):
    """30 KB pieces, too long for the quadratic references: the rank queue equals the heap
    (which the references check on shorter pieces) on one letter, two letters and noise."""
    rng = np.random.default_rng(7)
    tokens = list(BYTES)
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    for _ in range(40):  # random merges over a, b: many tokens of runs and overlaps
        a, b = (int(x) for x in rng.choice([ids[b"a"], ids[b"b"]] + list(range(256, len(tokens))), 2))
        new = tokens[a] + tokens[b]
        if new not in ids:
            ids[new] = len(tokens)
            tokens.append(new)
        merges.append((a, b))
    tok = Tokenizer(tokens, merges if rule != "token" else [], merge_rule=rule, whole_token_lookup=False)
    n = 30_000
    pieces = [b"a" * n, b"ab" * (n // 2), bytes(rng.choice([97, 98], n).astype(np.uint8)),
              bytes(rng.choice([97, 97, 97, 98], n).astype(np.uint8))]
    for word in pieces:
        results = {label: encode(word) for label, encode in _long_piece_encoders(tok, len(word))}
        assert len(set(map(tuple, results.values()))) == 1, {k: len(v) for k, v in results.items()}
        assert tok.decode_bytes(results["heap"]) == word


@pytest.mark.parametrize("unit", [b"a", b"ab", b"abc"])
@pytest.mark.parametrize("longest", [1, 2])
@pytest.mark.parametrize("lower_first", [False, True])
def test_rank_queue_runs_of_one_rank_with_a_lower_pair_after_each_merge(unit, longest, lower_first):
    """Runs of one repeated unit, whose pairs of one rank overlap (or follow each other): the
    queue steps past the stale ones and, when the next pair merges at the same rank, reuses its
    lookup and leaves out the pair between them. The tokens are the run's prefixes up to
    `longest` units and a letter; ranked longest first (a token rule vocabulary that is not
    monotone), that pair ranks lower and must interrupt the run."""
    run = unit * 3
    extra = [run[:k] for k in range(2, longest * len(unit) + 2)]
    tokens = BYTES + (extra[::-1] if lower_first else extra)
    tok = Tokenizer(tokens, [], merge_rule="token", whole_token_lookup=False)
    ranks = {t: i for i, t in enumerate(tokens)}
    for n in (300, 301, 1001):
        word = (unit * n)[:n]
        expected = [ranks[t] for t in encode_by_token_rank(word, ranks, False)]
        for label, encode in _long_piece_encoders(tok, n):
            assert encode(word) == expected, (label, n)


def test_rank_queue_settings_are_checked():
    core = BPECore(BYTES, np.zeros(0, np.int32), np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="rank_queue_min"):
        core.rank_queue_min = -1
    with pytest.raises(ValueError, match="rank_sort_budget"):
        core.rank_sort_budget = -1


@pytest.fixture(scope="module")
def trained(shared_data):
    text = shared_data.text("english.txt.gz", 300_000)
    return fastbpe.train(text, vocab_size=1000, progress=False, special_tokens=["<|endoftext|>"]), text


def test_trained_tokenizer_equals_reference_on_real_text(trained):
    tok, text = trained
    sample = text[:100_000]
    merges = tok.merges
    expected = []
    memo = {}
    for chunk in fastbpe.pretokenize(sample, tok.pattern):
        if chunk not in memo:
            word = tuple(bytes([b]) for b in chunk.encode("utf-8"))
            memo[chunk] = [tok._ids[t] for t in reference.encode_word(word, merges)]
        expected.extend(memo[chunk])
    assert tok.encode(sample) == expected


@given(st.text(max_size=200))
def test_decode_encode_round_trip(text):
    tok = _round_trip_tok()
    ids = tok.encode(text, disallowed_special=())
    assert tok.decode(ids) == text
    assert tok.decode_bytes(ids) == text.encode("utf-8")


@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=8))
def test_byte_level_round_trip_of_any_bytes(data, cuts):
    """Arbitrary bytes, invalid UTF-8 included, cut into arbitrary chunks."""
    tok = _round_trip_tok()
    bounds = sorted({0, len(data), *[c for c in cuts if c <= len(data)]})
    ids = tok.encode_chunk_bounds(data, np.array(bounds[:-1]), np.array(bounds[1:]))
    assert tok.decode_bytes(ids) == data
    assert tok.decode(ids, errors="replace") == data.decode("utf-8", "replace")


_TOK = []


def _round_trip_tok():
    if not _TOK:
        corpus = "the quick brown fox jumps over the lazy dog; ünïcödé 😀 текст 中文 " * 30
        _TOK.append(fastbpe.train(corpus, vocab_size=400, progress=False, special_tokens=["<|endoftext|>"]))
    return _TOK[0]


def test_decode_strict_raises_on_invalid_utf8():
    tok = _round_trip_tok()
    ids = tok.encode_chunk_bounds(b"\xff", np.array([0]), np.array([1]))
    with pytest.raises(UnicodeDecodeError):
        tok.decode(ids, errors="strict")
    assert tok.decode(ids) == "\ufffd"


def test_chunk_bounds_must_be_integers():
    tok = _round_trip_tok()
    with pytest.raises(TypeError, match="starts must be integers"):
        tok.encode_chunk_bounds(b"the cat", np.array([0.5]), np.array([5]))
    with pytest.raises(TypeError, match="ends must be integers"):
        tok.encode_chunk_bounds(b"the cat", [0], [5.7])
    with pytest.raises(TypeError, match="offsets must be integers"):
        tok.encode_utf8_chunks(b"the cat", np.array([0.0, 7.0]))
    assert tok.encode_chunk_bounds(b"the cat", [], []).tolist() == []
    assert tok.encode_chunk_bounds(b"the cat", np.array([0], np.uint8), [3]).tolist() == tok.encode("the")


def test_huge_chunk_without_split_is_exact():
    """A 2 MB chunk through the heap encoder (the benchmark times 10 MB)."""
    tokens = BYTES + [b"ab", b"abab", b"ababab"]
    a, b = ord("a"), ord("b")
    tok = Tokenizer(tokens, [(a, b), (256, 256), (257, 256)], pattern=r"\S+")
    ids = tok.encode("ab" * 1_000_000)
    # Replay: ab everywhere, then abab pairs left to right, then (abab, ab) never applies
    # because no ab is left after the second merge consumed them pairwise.
    assert ids == [257] * 500_000
    # With one more "ab", the last abab and that ab make ababab.
    assert tok.encode("ab" * 1_000_001)[-2:] == [257, 258]


def test_cache_eviction_keeps_results_exact(trained):
    tok, text = trained
    sample = text[:30_000]
    expected = tok.encode(sample)
    core = tok._core()
    from fastbpe.split.bounds import chunk_bounds

    data, starts, ends = chunk_bounds(sample, tok.pattern)
    small = EncodeState(max_ids=50)  # forces many clears
    assert core.encode_chunks(data, starts, ends, small).tolist() == expected
    assert core.encode_chunks(data, starts, ends, small).tolist() == expected


@pytest.mark.parametrize("max_ids", [4_000_000, 300, 20])
def test_long_chunks_are_cached_and_stay_exact(trained, max_ids):
    """Chunks of 100..1100 bytes (the cache keeps up to 1024; lengths on both sides of it and of
    the old 128), ASCII and not, many of them again and again: the second and later passes are
    answered by the chunk cache, which a small ``max_ids`` clears over and over (by ids, or by
    the key bytes of the long chunks), and every pass equals each chunk encoded alone."""
    tok = trained[0]
    core = tok._core()
    pieces = [b"the cat ", "\u2500\u252c".encode(), b"=", b"  ", "n\u00e9e ".encode(), b"\xff\x00"]
    chunks = [(pieces[k % len(pieces)] * 1100)[:n] for k, n in
              enumerate([100, 127, 128, 129, 130, 200, 219, 255, 256, 257, 511, 1023, 1024, 1025, 1100])]
    chunks = chunks + chunks[::2] + chunks[::-1]
    expected = _one_by_one(core, chunks)
    state = EncodeState(max_ids=max_ids)
    for _ in range(3):
        assert core.encode_chunks(*_chunked(chunks), state).tolist() == expected
    assert state.hits > 0


def test_long_chunk_keys_bound_the_chunk_cache():
    """Chunks of 600..800 bytes that are few ids each (tokens of 512, 256, ... bytes of "a"):
    with ``max_ids=1000`` their ids would fill the cache only after hundreds of chunks, but
    their key bytes pass 16 bytes per id after about 20, and clear it; ids stay exact."""
    tokens = [bytes([b]) for b in range(256)]
    merges = []
    for k in range(9):  # "a" * 2**(k + 1) from two of "a" * 2**k
        left = tokens.index(b"a" * 2 ** k)
        merges.append((left, left))
        tokens.append(b"a" * 2 ** (k + 1))
    tok = Tokenizer(tokens, merges)
    core = tok._core()
    chunks = [b"a" * (600 + k) for k in range(200)]
    expected = _one_by_one(core, chunks)
    state = EncodeState(max_ids=1000)
    assert core.encode_chunks(*_chunked(chunks), state).tolist() == expected
    assert 0 < state.size <= 16_000 // 600
    assert core.encode_chunks(*_chunked(chunks), state).tolist() == expected
    everything = EncodeState()
    core.encode_chunks(*_chunked(chunks), everything)
    assert everything.size == len(chunks)


def test_batch_and_numpy_outputs(trained):
    tok, text = trained
    docs = [text[i:i + 5000] for i in range(0, 50_000, 5000)] + ["", "x"]
    single = [tok.encode(d) for d in docs]
    assert tok.encode_batch(docs, workers=2) == single
    assert tok.encode_batch(docs, workers=1) == single
    arrays = tok.encode_batch(docs, workers=2, as_numpy=True)
    assert all(a.dtype == np.uint16 and a.tolist() == s for a, s in zip(arrays, single))
    # uint32 whatever the ids, as tiktoken's (r50k's uint16 ids + 50257 wrapped around)
    assert tok.encode_to_numpy(docs[0]).dtype == np.uint32 and tok.encode_to_numpy(docs[0]).tolist() == single[0]
    big = Tokenizer(BYTES + [bytes([1, 2])], [(1, 2)], special_tokens={"<|x|>": 70_000})
    assert big.encode_to_numpy("ab").dtype == np.uint32


def test_bad_input_is_a_clear_error(trained):
    tok, _ = trained
    with pytest.raises(TypeError):
        tok.encode(b"bytes")
    with pytest.raises(TypeError):
        tok.encode_batch(["ok", 3])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.decode([10**6])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.decode([-1])
    with pytest.raises(ValueError, match="workers"):
        tok.encode_batch(["a"], workers=0)
    core = tok._core()
    with pytest.raises(ValueError, match="bounds"):
        core.encode_chunks(b"abc", np.array([0, 1], dtype=np.int64), np.array([2, 5], dtype=np.int64), EncodeState())
    with pytest.raises(ValueError, match="bounds"):
        core.encode_chunks(b"abc", np.array([2], dtype=np.int64), np.array([1], dtype=np.int64), EncodeState())
    no_z = Tokenizer([bytes([b]) for b in range(97, 100)], [], pattern=r"\S+")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        no_z.encode("abz")
    assert no_z.tokens("abz") == [b"a", b"b", b"z"]


def test_scan_max_is_checked():
    core = BPECore(BYTES, np.zeros(0, np.int32), np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="scan_max"):
        core.scan_max = 1000


def test_core_rejects_bad_tables():
    with pytest.raises(ValueError, match="unknown token id"):
        BPECore(BYTES, np.array([0], np.int32), np.array([999], np.int32))
    with pytest.raises(ValueError, match="not a token"):
        BPECore(BYTES, np.array([0], np.int32), np.array([1], np.int32))
    with pytest.raises(ValueError, match="rule"):
        BPECore(BYTES, np.zeros(0, np.int32), np.zeros(0, np.int32), "nope")


def test_core_names_the_first_bad_merge():
    """The merges' concatenations are looked up together: the error still names the first bad
    merge, whichever of the two checks it fails, and the made ids of good merges are right."""
    tokens = BYTES + [b"ab", b"abc"]
    a, b, c, ab = 97, 98, 99, len(BYTES)
    with pytest.raises(ValueError, match=r"^merge 1: the concatenation"):
        BPECore(tokens, np.array([a, b, 0], np.int32), np.array([b, a, 999], np.int32))
    with pytest.raises(ValueError, match=r"^merge 1 refers to an unknown token id"):
        BPECore(tokens, np.array([a, -1, b], np.int32), np.array([b, a, a], np.int32))
    core = BPECore(tokens, np.array([a, ab], np.int32), np.array([b, c], np.int32), "pair")
    assert core.made.tolist() == [ab, ab + 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=40), st.sampled_from(["replay", "pair"]),
       st.data())
def test_made_ids_given_build_the_tables_their_lookup_builds(words, rule, data):
    """Merges given with the id each makes (a reader's third column) are checked byte for byte
    instead of looked up: the same tables and encodings as without them; a wrong id anywhere is
    the ValueError naming that merge, whether its concatenation is another token or none."""
    tok = fastbpe.train([b"\x00".join(words)], vocab_size=256 + 30, errors="bytes", progress=False)
    tokens, pairs = tok.token_bytes, tok.merge_ids.astype(np.int32)
    left, right = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
    looked_up = BPECore(tokens, left, right, rule)
    given_made = BPECore(tokens, left, right, rule, made=looked_up.made)
    assert given_made.made.tolist() == looked_up.made.tolist() and given_made.num_pairs == looked_up.num_pairs
    text = b"".join(words)
    state = EncodeState()
    bounds = np.array([0, len(text)], np.int64)
    assert given_made.encode_chunks(text, bounds[:1], bounds[1:], state).tolist() == \
        looked_up.encode_chunks(text, bounds[:1], bounds[1:], EncodeState()).tolist()
    if len(left):
        r = data.draw(st.integers(0, len(left) - 1))
        wrong = looked_up.made.copy()
        wrong[r] = data.draw(st.sampled_from([0, 255, len(tokens) - 1]).filter(lambda i: i != wrong[r]))
        with pytest.raises(ValueError, match=rf"^merge {r} says it makes token {wrong[r]}, but its concatenation "
                                             rf"is token {looked_up.made[r]}$"):
            BPECore(tokens, left, right, rule, made=wrong)


def test_made_ids_given_are_checked():
    """A given id of another token, of none, or one too few of them: each refused by name."""
    tokens = BYTES + [b"ab", b"abc"]
    a, b, c, ab = 97, 98, 99, len(BYTES)
    left, right = np.array([a, ab], np.int32), np.array([b, c], np.int32)
    with pytest.raises(ValueError, match=rf"^merge 1 says it makes token {a}, but its concatenation is token "
                                         rf"{ab + 1}$"):
        BPECore(tokens, left, right, made=np.array([ab, a], np.int32))
    with pytest.raises(ValueError, match=rf"^merge 0 says it makes token {ab}, but its concatenation is not a token$"):
        BPECore(tokens, np.array([b, a], np.int32), np.array([a, b], np.int32), made=np.array([ab, ab], np.int32))
    with pytest.raises(ValueError, match="one id per merge"):
        BPECore(tokens, left, right, made=np.array([ab], np.int32))
    with pytest.raises(ValueError, match=r"^merge 1 refers to an unknown token id"):
        BPECore(tokens, np.array([a, -1], np.int32), right, made=np.array([ab, ab + 1], np.int32))
    with pytest.raises(ValueError, match=r"^merge 1 says it makes token 9999, which is not a token id$"):
        Tokenizer(tokens, [(a, b, ab), (ab, c, 9999)])


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer's quarantine keeps freed memory: the peak measures it, not the check")
def test_a_bad_merge_is_found_before_the_rest_are_joined():
    """The merge check joins merges a batch of about a megabyte at a time: a table whose first
    merge is bad, and whose 2,000 others each join a 200 KB token (400 MB in all), is refused
    having joined one batch."""
    code = (
        "import resource, numpy as np\n"
        "from fastbpe._core.encode import BPECore\n"
        "tokens = [bytes([b]) for b in range(256)] + [b'x' * 200_000]\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    BPECore(tokens, np.full(2000, 256, np.int32), np.full(2000, 97, np.int32))\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    message, grown_mb = run.stdout.splitlines()
    assert message.startswith("merge 0: the concatenation") and int(grown_mb) < 100, run.stdout


def test_tokenizer_pickles_and_encodes_after(trained):
    import pickle

    tok, text = trained
    tok.encode("warm the core up")
    again = pickle.loads(pickle.dumps(tok))
    assert again == tok
    assert again.encode(text[:5000]) == tok.encode(text[:5000])


def test_chunk_bounds_scanner_equals_regex_path(trained):
    """A named pattern's bounds come from its compiled scanner; the same regex spelled so that
    it names no table entry runs the regex path: both give the same bounds and ids."""
    from fastbpe.split.bounds import chunk_bounds

    tok, text = trained
    sample = text[:20_000] + " ünïcödé 😀"
    fast = chunk_bounds(sample, "gpt2")
    slow = chunk_bounds(sample, "(?:" + PATTERNS["gpt2"] + ")")
    assert fast[0] == slow[0] and fast[1].tolist() == slow[1].tolist() and fast[2].tolist() == slow[2].tolist()
    assert tok._core().encode_chunks(*fast, EncodeState()).tolist() == tok.encode(sample)


def test_offsets_entry_point(trained):
    from fastbpe.split.bounds import chunk_bounds

    tok, text = trained
    sample = text[:10_000] + " ünïcödé"
    data, starts, ends = chunk_bounds(sample, tok.pattern)
    offsets = np.append(starts, ends[-1])
    assert tok.encode_utf8_chunks(data, offsets).tolist() == tok.encode(sample)
    assert tok._core().encode_offsets(data, offsets, EncodeState()).tolist() == tok.encode(sample)
    with pytest.raises(ValueError, match="offsets"):
        tok.encode_utf8_chunks(data, offsets[:-1])
    assert tok.encode_utf8_chunks(b"", np.array([0])).tolist() == []


# Letters, digits, marks, CJK, spaces of several kinds, newlines, apostrophes, punctuation.
ALPHABET = "ab AB\t\n\r 09'sllve.,!?é\u0301\u4e2d\u3002\u00a0\u2028😀"


def _with_pattern(tok: Tokenizer, name: str) -> Tokenizer:
    return Tokenizer(tok.token_bytes, tok.merge_ids.tolist(), pattern=name)


def _regex_reference(tok: Tokenizer, text: str) -> list:
    """Chunks by the regex module, ids by encode_chunks: the two-pass path, without the scanner."""
    chunks = [c.encode("utf-8", "surrogatepass") for c in regex.findall(PATTERNS[tok.pattern], text)]
    lengths = np.array([len(c) for c in chunks], dtype=np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return tok._core().encode_chunks(b"".join(chunks), starts, ends, EncodeState()).tolist()


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=80))
def test_encode_text_equals_regex_split(trained, name, text):
    tok = _with_pattern(trained[0], name)
    ids = tok._core().encode_text(text.encode("utf-8"), TILING_PATTERN_IDS[name], EncodeState())
    assert ids.dtype == np.int32
    assert ids.tolist() == _regex_reference(tok, text)
    assert tok._core().encode_str(text, TILING_PATTERN_IDS[name], EncodeState()).tolist() == ids.tolist()
    assert tok.encode_ordinary(text) == ids.tolist()


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40) | st.text(alphabet="aé\xff", max_size=40) | st.text(alphabet="a\u0100\u4e2d\uffff", max_size=40))
def test_encode_str_transcodes_every_kind_of_str(trained, text):
    """Every str storage kind (ASCII, Latin-1, UCS-2, UCS-4) and every code point (lone
    surrogates: None, as there is no UTF-8 for them)."""
    tok = _with_pattern(trained[0], "o200k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["o200k"]
    got = core.encode_str(text, pattern, EncodeState())
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        assert got is None
        assert tok.encode(text) == _regex_reference(tok, text)
        return
    # (the split itself is checked against the regex above and in test_pretokenize.py)
    assert got.tolist() == core.encode_text(data, pattern, EncodeState()).tolist()


# Units whose low bits look ASCII but are not (U+0100 + 0x41, U+7F41, U+1007F) and the ASCII
# edges (0x7F, 0x80, 0xFF): each storage kind's 16-unit ASCII test must see all their bits.
NEAR_ASCII = ["\x7f", "\x80", "\xff", "\u0141", "\u7f41", "\uff00", "\U0001007f", "\U00010041"]


@pytest.mark.parametrize("odd", NEAR_ASCII)
def test_encode_str_transcodes_ascii_runs_beside_each_kind_of_unit(trained, odd):
    """ASCII runs of every length around the 16 units transcoded at a time, with one unit
    (which sets the str's storage kind) at every offset of a 16-unit window."""
    tok = _with_pattern(trained[0], "cl100k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["cl100k"]
    for length in (15, 16, 17, 31, 32, 33, 48):
        for at in range(0, 18):
            text = ("the cat sat. " * 4)[:length]
            text = text[:at] + odd + text[at:] + " and so on, ascii after it"
            got = core.encode_str(text, pattern, EncodeState())
            assert got.tolist() == core.encode_text(text.encode("utf-8"), pattern, EncodeState()).tolist()


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
def test_encode_text_on_real_text_across_blocks_and_cache_clears(trained, name):
    tok, text = trained
    tok = _with_pattern(tok, name)
    sample = text[:20_000] + " ünïcödé 😀 中文。"   # thousands of chunks: many scanner blocks
    expected = _regex_reference(tok, sample)
    core = tok._core()
    small = EncodeState(max_ids=50)                 # the chunk cache clears over and over
    for state in (small, small, EncodeState()):
        assert core.encode_text(sample.encode(), TILING_PATTERN_IDS[name], state).tolist() == expected
    assert tok.encode(sample) == expected


def test_encode_text_edge_cases(trained):
    tok = _with_pattern(trained[0], "cl100k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["cl100k"]
    assert core.encode_text(b"", pattern, EncodeState()).tolist() == []
    assert core.encode_str("", pattern, EncodeState()).tolist() == []

    class Text(str):
        pass

    assert core.encode_str(Text("héllo wörld"), pattern, EncodeState()).tolist() == _regex_reference(tok, "héllo wörld")
    assert core.encode_str("\U0001F600" * 3 + "\ud800", pattern, EncodeState()) is None
    state = EncodeState()                          # one state, strs of shrinking/growing widths
    for text in ["中文" * 500, "é" * 10, "a😀" * 700, "x"]:
        assert core.encode_str(text, pattern, state).tolist() == _regex_reference(tok, text)
    assert core.encode_text(b"a", pattern, EncodeState()).tolist() == [tok._ids[b"a"]]
    assert core.encode_text(b"a" * 5000, pattern, EncodeState()).tolist() == _regex_reference(tok, "a" * 5000)
    # not UTF-8: None; the tokenizer replaces lone surrogates by U+FFFD first, as tiktoken does
    assert core.encode_text(b"ab\xff", pattern, EncodeState()) is None
    text = "ab \ud800 cd"
    assert core.encode_text(text.encode("utf-8", "surrogatepass"), pattern, EncodeState()) is None
    assert tok.encode(text) == _regex_reference(tok, "ab \ufffd cd")
    with pytest.raises(ValueError, match="tile"):
        core.encode_text(b"ab", 0, EncodeState())    # whitespace drops text: not fusable
    with pytest.raises(ValueError, match="tile"):
        core.encode_text(b"ab", 99, EncodeState())
    with pytest.raises(TypeError):
        core.encode_text(b"ab", pattern, None)
    with pytest.raises(TypeError):
        core.encode_str(b"ab", pattern, EncodeState())
    with pytest.raises(ValueError, match="tile"):
        core.encode_str("ab", 0, EncodeState())
    no_z = Tokenizer([bytes([b]) for b in range(97, 100)], [], pattern="cl100k")
    with pytest.raises(ValueError, match="0x7a is not in the vocabulary"):
        no_z.encode("ab" * 300 + "z")
    assert no_z.tokens("abz") == [b"a", b"b", b"z"]


def test_fused_scanner_id():
    for name, pattern in TILING_PATTERN_IDS.items():
        assert fused_scanner_id(name) == pattern
        assert fused_scanner_id(PATTERNS[name]) == pattern
    assert fused_scanner_id("whitespace") is None
    assert fused_scanner_id(r"\S+|\s+") is None


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1) | st.integers(0, 300), max_size=50))
def test_id_list_equals_tolist(ids):
    core = BPECore([bytes([b]) for b in range(256)] + [b"ab"], np.array([97], np.int32), np.array([98], np.int32))
    array = np.array(ids, dtype=np.int32)
    state = EncodeState()
    assert core.id_list(array, state) == array.tolist()
    assert all(type(x) is int for x in core.id_list(array, state))
    # a state whose ints came from a smaller core grows them; a bigger core's are fine too
    small = BPECore([bytes([b]) for b in range(256)], np.zeros(0, np.int32), np.zeros(0, np.int32))
    for first, second in ((small, core), (core, small)):
        state = EncodeState()
        assert first.id_list(array, state) == second.id_list(array, state) == array.tolist()


def test_id_lists_before_and_after_the_shared_ints():
    """The first lists make their own ints; once they add up to the vocabulary's size the
    state's shared ones are made: the lists are the same either way."""
    tokens = [bytes([b]) for b in range(256)] + [bytes([1, b]) for b in range(100)]  # (356 ids)
    core = BPECore(tokens, np.array([1], np.int32), np.array([2], np.int32))
    array = np.array([256, 0, 255, 300, 400, -5] * 20, dtype=np.int32)
    state = EncodeState()
    lists = [core.id_list(array, state) for _ in range(5)]  # (120 ids each: shared from the third)
    assert all(ids == array.tolist() for ids in lists)
    # (300: an int above CPython's cached ones, made fresh, then once for the state)
    assert lists[3][3] is lists[4][3] and lists[0][3] is not lists[4][3]


def test_id_list_outlives_its_core():
    core = BPECore([bytes([b]) for b in range(256)] + [b"\x01\x02"], np.array([1], np.int32), np.array([2], np.int32))
    state = EncodeState()
    ids = core.id_list(np.array([256, 255, 256, 1000], np.int32), state)
    del core, state
    gc.collect()
    assert ids == [256, 255, 256, 1000]


def _chunked(chunks):
    """``encode_chunks`` arguments for a list of byte chunks laid end to end."""
    lengths = np.array([len(c) for c in chunks], dtype=np.int64)
    ends = np.cumsum(lengths)
    return b"".join(chunks), ends - lengths, ends


def _one_by_one(core, chunks):
    """Ids of every chunk encoded alone, each with a fresh state: no cache can answer."""
    ids = []
    for c in chunks:
        ids += core.encode_chunks(c, np.array([0], np.int64), np.array([len(c)], np.int64), EncodeState()).tolist()
    return ids


# chunks of up to 20 bytes over a few letters, NUL and 0xff: many repeats, lengths on both
# sides of the short-chunk cache's 8- and 16-byte words, chunks that differ only past their end
SHORT_CHUNKS = st.lists(st.binary(min_size=1, max_size=20).map(lambda b: bytes(b"ab\x00\xff"[x % 4] for x in b)),
                        min_size=1, max_size=400)


@settings(max_examples=60, deadline=None)
@given(case=merge_lists(alphabet=b"ab\x00\xff", max_merges=16), chunks=SHORT_CHUNKS,
       bits=st.sampled_from([1, 2, 16]))
def test_short_chunk_cache_collisions_keep_results_exact(case, chunks, bits):
    """The short-chunk cache in front of the chunk cache: one state over many calls, its table
    tiny (every chunk collides with others) or full size, against each chunk encoded alone."""
    tokens, merges = case
    tok = Tokenizer(tokens, merges)
    core = tok._core()
    expected = _one_by_one(core, chunks)
    state = EncodeState(short_cache_bits=bits, short_cache_max_bits=bits)
    for _ in range(3):  # the second and third calls are answered from the caches
        assert core.encode_chunks(*_chunked(chunks), state).tolist() == expected
    assert core.encode_chunks(*_chunked(chunks[::-1]), state).tolist() == _one_by_one(core, chunks[::-1])


def test_short_chunk_cache_keys_are_exact_at_word_boundaries(trained):
    """Chunks of 7..17 bytes, equal up to their end and followed by different bytes, with a NUL
    at the end (zero padding must not make "ab" and "ab\\0" one key), and at the very end of the
    data (fewer than 16 bytes left to read)."""
    tok = trained[0]
    core = tok._core()
    state = EncodeState(short_cache_bits=1, short_cache_max_bits=1)
    for n in range(1, 18):
        word = (b"the quick brown fox"[:n])
        for chunks in ([word, b"x" * 20], [word, b"y" * 20], [word + b"\x00", b"z"], [word], [b"q", word]):
            assert core.encode_chunks(*_chunked(chunks), state).tolist() == _one_by_one(core, chunks)


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
@pytest.mark.parametrize("bits", [1, 2])
def test_short_chunk_cache_on_the_text_path_at_every_length(trained, name, bits):
    """The split-and-encode loop with a tiny short-chunk cache (every chunk evicts another):
    chunks of every length from 1 to 20 bytes (the cache keeps 1..15), each with and without
    a leading space, ids equal to the regex split encoded chunk by chunk."""
    tok = _with_pattern(trained[0], name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [letters[k:k + n] for n in range(1, 21) for k in (0, 3)]
    text = " ".join(words + words[::-1] + words) + " " + "".join(w + "." for w in words)
    state = EncodeState(short_cache_bits=bits, short_cache_max_bits=bits)
    for _ in range(2):  # the second pass is answered by the caches
        assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == _regex_reference(tok, text)


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
def test_short_chunk_cache_hits_near_the_end_of_the_text(trained, name):
    """A hit in the short-chunk cache writes four (or eight) ids whatever its count, into room
    for one id a byte: chunks of one to four ids, cached by an earlier text, then met again as
    the last chunks of a text, starting 1 to 6 bytes before its end; ids equal to the regex
    split's."""
    tok = _with_pattern(trained[0], name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    state = EncodeState()
    endings = ["q", "qz", "zxq", "qzxj", " qzxj", "jqxz", " the", "the", "..", "!?!?"]
    for ending in endings:
        ids = _regex_reference(tok, ending)
        assert 1 <= len(ids) <= len(ending.encode("utf-8"))
    warm = " ".join(endings) + " " + "".join(endings)
    assert core.encode_text(warm.encode("utf-8"), pattern, state).tolist() == _regex_reference(tok, warm)
    assert any(len(_regex_reference(tok, e)) == 4 for e in endings)  # (a four-id chunk is among them)
    for ending in endings:
        for text in (ending, "a " + ending, "a" + ending, ending + ending):
            assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == _regex_reference(tok, text)


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
@pytest.mark.parametrize("bits", [1, 2, 16])
def test_short_chunk_cache_holds_chunks_of_up_to_eight_ids(name, bits):
    """With no merges every byte is a token, so a chunk of n bytes has n ids: chunks of five to
    eight ids take both ways of their set, those of nine or more are not kept. A cache of one
    set (every chunk evicts the one before: a chunk of many ids evicts two, and a chunk put
    after it drops it whole), of two, or a full one; then chunks of every length as the last
    of a text, within a few bytes of its end. Ids equal to the regex split's."""
    tok = Tokenizer(list(BYTES), [], pattern=name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [letters[k:k + n] for n in range(1, 14) for k in (0, 5)]
    text = " ".join(words + words[::-1] + words[::3] + words)
    data = text.encode("utf-8")
    expected = _regex_reference(tok, text)
    assert sorted({len(c.encode()) for c in regex.findall(PATTERNS[name], text)}) == list(range(1, 15))
    state = EncodeState(short_cache_bits=bits, short_cache_max_bits=bits)
    for _ in range(3):  # the later passes are answered by the caches
        assert core.encode_text(data, pattern, state).tolist() == expected
    for word in words:
        for tail in (word, " " + word, word + ".", "x " + word):
            assert core.encode_text(tail.encode(), pattern, state).tolist() == _regex_reference(tok, tail)


# Words of two-byte letters, 7 to 15 letters: Cyrillic (D0 D1, and D2 past U+047F), Greek
# (CE CF), Arabic (D8 D9, and DA DB past U+067F), and words mixing two scripts or a Latin letter
TWO_BYTE_WORDS = ["переводчики", "интернационализация", "достопримечательность", "Ёжикёжикёжик",
                  "ЀѐЁёҀҁҊҋҌҍҎҏҐґ", "ҊҋҌҍҎҏҐґҒғҔҕҖ", "καλημέραμαςόλους", "ΑΒΓΔΕΖΗΘΙΚΛΜΝ",
                  "مستشفياتالمدينة", "ڤڥڦڧڨکڪګڬڭڮگ", "Пρивет", "clаss", "паралелльныйΣ"]


@functools.lru_cache(maxsize=None)
def _two_byte_words_tokenizer(name):
    """Trained on the words, so that most of them are one to eight tokens."""
    text = " ".join(TWO_BYTE_WORDS * 30 + [w[:7] for w in TWO_BYTE_WORDS] * 10)
    return fastbpe.train(text=text, vocab_size=1200, pattern=name, progress=False)


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
@pytest.mark.parametrize("bits", [1, 2, 16])
def test_short_chunk_cache_holds_words_of_two_byte_letters(name, bits):
    """A chunk of more than 15 bytes that is an ASCII byte or none and then at most 13 two-byte
    letters whose lead bytes are one even byte or the next has a short-cache key of its own
    form: such words and their neighbours (leads from two pairs, 14 letters or more, a Latin
    letter among them) after a space, a bracket, a newline or nothing, every prefix of each
    word, in caches of one set, two or full size, three passes; ids equal to the regex split's."""
    tok = _two_byte_words_tokenizer(name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    words = TWO_BYTE_WORDS + [w[:k] for w in TWO_BYTE_WORDS for k in range(7, len(w))]
    lengths = [len(ids) for ids in tok.encode_batch(words)]
    assert min(lengths) <= 4 < max(lengths)  # (one-way and two-way entries among them)
    text = " ".join(words) + "\n" + "(".join(words[::-1]) + "\n" + "\n".join(words)
    expected = _regex_reference(tok, text)
    state = EncodeState(short_cache_bits=bits, short_cache_max_bits=bits)
    for _ in range(3):
        assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == expected
    for word in TWO_BYTE_WORDS:
        for tail in (word, " " + word, "x " + word + ".", word + word):
            assert core.encode_text(tail.encode(), pattern, state).tolist() == _regex_reference(tok, tail)


def test_keys_of_two_byte_letters_four_at_a_time(tmp_path):
    """native/pair_keys.cpp: pack_pairs, which makes the key four letters a word, gives the key
    (or the refusal) of a letter at a time for every length, every byte replaced by every
    value, and random chunks, each in a heap block of its own size under AddressSanitizer and
    UBSan where the compiler has them (no read past the chunk)."""
    from tests.native import build_checked, program_env

    program = str(tmp_path / "pair_keys")
    built = build_checked("pair_keys.cpp", program)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([program], capture_output=True, text=True, env=program_env(), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    if sys.byteorder == "little":
        checked, keys = (int(w) for w in regex.match(r"checked (\d+) chunks, (\d+) keys", run.stdout).groups())
        assert checked > 1_500_000 and keys > 100_000, run.stdout


def test_short_keys_whatever_is_readable_past_the_chunk(tmp_path):
    """native/short_keys.cpp: pack_short gives a chunk of 1..15 bytes the key of its layout
    (its bytes, zeros, its length) whether 16 bytes are readable from it or only its own, each
    chunk ending its heap block under AddressSanitizer and UBSan where the compiler has them
    (no read past what it was told it may read); load_upto8 equals a copy."""
    from tests.native import build_checked, program_env

    program = str(tmp_path / "short_keys")
    built = build_checked("short_keys.cpp", program)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([program], capture_output=True, text=True, env=program_env(), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert int(regex.match(r"checked (\d+) keys", run.stdout).group(1)) > 700_000, run.stdout


def _two_byte_letters_key(chunk: bytes) -> bytes:
    """The 16 bytes of the short-cache key the encoder packs a chunk of an ASCII byte and 8..13
    two-byte letters into (little-endian): the 15 bytes of a chunk whose plain key is the same."""
    head = chunk[0] < 0x80
    letters = chunk[head:]
    chars = len(letters) // 2
    bits = sum(((letters[2 * j] & 1) << 6 | (letters[2 * j + 1] & 0x3F)) << (7 * j) for j in range(chars))
    lo, hi = bits & ((1 << 63) - 1), bits >> 63
    w0 = (0x80 | head << 4 | chars) | (letters[0] & 0xFE) << 8 | (chunk[0] if head else 0) << 16 | (lo << 24)
    w1 = (lo >> 40) | (hi << 23) | (0xF << 56)
    return (w0 & (2**64 - 1)).to_bytes(8, "little") + w1.to_bytes(8, "little")


def _text_and_twin_in_one_cache(core, pattern, text: bytes, twin: bytes):
    """``text`` (one chunk) by encode_text and the 15-byte chunk ``twin`` by encode_chunks,
    alternated in either order in one state whose short-chunk cache is one set: each gives the
    ids it gives in a fresh state."""
    bounds = np.array([0], np.int64), np.array([len(twin)], np.int64)
    want = core.encode_text(text, pattern, EncodeState()).tolist()
    twin_ids = core.encode_chunks(twin, *bounds, EncodeState()).tolist()
    for first in ("text", "chunk"):
        state = EncodeState(short_cache_bits=1, short_cache_max_bits=1)
        for _ in range(2):
            for step in (first, "chunk" if first == "text" else "text"):
                if step == "text":
                    assert core.encode_text(text, pattern, state).tolist() == want
                else:
                    assert core.encode_chunks(twin, *bounds, state).tolist() == twin_ids


@pytest.mark.skipif(sys.byteorder != "little", reason="the second key form is made on little-endian CPUs only")
def test_chunks_that_start_with_a_continuation_byte_never_meet_keys_of_two_byte_letters():
    """encode_chunks takes any bytes: a 15-byte chunk whose plain key equals the key of a word of
    two-byte letters (it starts with a continuation byte, as no chunk of a text does) is not
    looked up in the short-chunk cache, so one state encodes both right, in either order."""
    tok = _two_byte_words_tokenizer("cl100k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["cl100k"]
    bounds = np.array([0], np.int64), np.array([15], np.int64)
    for word in (" переводчики", " Ёжикёжикёжик", " καλημέραμας", " مستشفياتالمد"):
        data = word.encode()
        want = core.encode_text(data, pattern, EncodeState()).tolist()
        assert len(want) <= 8  # (kept in the short-chunk cache)
        twin = _two_byte_letters_key(data)[:15]  # (its 16th byte, 0x0F, is a 15-byte key's length)
        assert core.encode_chunks(twin, *bounds, EncodeState()).tolist() != want
        _text_and_twin_in_one_cache(core, pattern, data, twin)


@functools.lru_cache(maxsize=None)
def _indented_code_tokenizer(name):
    """Trained on indented lines, so that runs of spaces are one to a dozen tokens."""
    lines = [" " * (4 * (i % 11)) + "x = f(y)  # " + "-" * (i % 23) + "\n" for i in range(400)]
    return fastbpe.train(text="".join(lines), vocab_size=400, pattern=name, progress=False)


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
@pytest.mark.parametrize("bits", [1, 2, 16])
def test_short_chunk_cache_holds_runs_of_one_byte(name, bits):
    """A chunk of more than 15 bytes that is one ASCII byte repeated (indentation, a rule of
    dashes) has a short-cache key of its own form: runs of 14 to 70 spaces, tabs, dashes and
    equals signs before a word, a newline, another run or the text's end, in caches of one
    set, two or full size, three passes; ids equal to the regex split's."""
    tok = _indented_code_tokenizer(name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    runs = [c * n for c in " \t-=" for n in range(14, 71, 3)]
    assert min(len(ids) for ids in tok.encode_batch(runs)) <= 4 < max(len(ids) for ids in tok.encode_batch(runs))
    text = "".join(r + after for r in runs for after in ("x = 1\n", "\n", "y", " ")) + runs[-1]
    expected = _regex_reference(tok, text)
    state = EncodeState(short_cache_bits=bits, short_cache_max_bits=bits)
    for _ in range(3):
        assert core.encode_text(text.encode(), pattern, state).tolist() == expected
    for run in runs:
        for tail in (run, run + "a", "a" + run, run + run[0] + "b"):
            assert core.encode_text(tail.encode(), pattern, state).tolist() == _regex_reference(tok, tail)


@pytest.mark.skipif(sys.byteorder != "little", reason="the key is checked as little-endian bytes")
def test_chunks_that_start_with_a_continuation_byte_never_meet_keys_of_one_byte_runs():
    """A 15-byte chunk given to encode_chunks whose plain key equals the key of a run of one byte
    (0xBF, the byte, the length; it starts with a continuation byte, as no chunk of a text does)
    is not looked up in the short-chunk cache: one state encodes both right, in either order."""
    tok = _indented_code_tokenizer("cl100k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["cl100k"]
    for run in (b" " * 19, b"\t" * 16, b"-" * 16, b"=" * 40):  # (each one chunk)
        twin = (0xBF | run[0] << 8 | len(run) << 16).to_bytes(8, "little") + bytes(7)
        _text_and_twin_in_one_cache(core, pattern, run, twin)


def test_short_chunk_cache_size_is_checked():
    with pytest.raises(ValueError, match="short_cache_bits"):
        EncodeState(short_cache_bits=0)
    with pytest.raises(ValueError, match="short_cache_bits"):
        EncodeState(short_cache_bits=25)
    with pytest.raises(ValueError, match="short_cache_max_bits"):
        EncodeState(short_cache_bits=8, short_cache_max_bits=7)
    with pytest.raises(ValueError, match="short_cache_max_bits"):
        EncodeState(short_cache_max_bits=25)
    assert EncodeState().short_cache_bits == 16


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
def test_short_chunk_cache_grows_while_it_thrashes_and_stays_exact(trained, name):
    """A tiny short-chunk cache that may grow: a text with far more distinct short chunks than
    it holds makes it quadruple (keeping what it holds) until they fit or it reaches its
    limit, ids exact on every pass; one that may not grow stays at its size. (A cache whose
    limit is 2**16 entries takes the address space for them at once and grows in place; the
    smaller ones move at each step.)"""
    tok = _with_pattern(trained[0], name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [letters[i % 26] + letters[j % 26] + letters[(i * j) % 26] for i in range(40) for j in range(40)]
    text = " ".join(words) + " " + ", ".join(words[::7]) + "\n" + "9" * 40 + "\n"
    expected = _regex_reference(tok, text)
    growing = EncodeState(short_cache_bits=4, short_cache_max_bits=12)
    in_place = EncodeState(short_cache_bits=4, short_cache_max_bits=16)
    capped = EncodeState(short_cache_bits=4, short_cache_max_bits=5)  # (a step of two would pass 5)
    fixed = EncodeState(short_cache_bits=4, short_cache_max_bits=4)
    for _ in range(3):
        for state in (growing, in_place, capped, fixed):
            assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == expected
    assert growing.short_cache_bits in (6, 8, 10, 12)  # four times the entries at each step
    assert in_place.short_cache_bits in (6, 8, 10, 12, 14, 16)
    assert capped.short_cache_bits == 5
    assert fixed.short_cache_bits == 4


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
def test_short_chunk_cache_does_not_grow_for_rare_evictions(trained, name):
    """Chunks that collide in a tiny cache but come rarely beside one that fills the text: its
    evictions are a few among many lookups, and quadrupling would cost more than the misses it
    saves, so the cache keeps its size; ids exact on every pass."""
    tok = _with_pattern(trained[0], name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    letters = "abcdefghijklmnopqrstuvwxyz"
    rare = [letters[i] + letters[(3 * i + 1) % 26] + letters[(7 * i + 2) % 26] for i in range(26)]
    text = " the" * 20_000 + " " + " ".join(rare) + "\n"
    expected = _regex_reference(tok, text)
    state = EncodeState(short_cache_bits=4, short_cache_max_bits=12)
    for _ in range(3):
        assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == expected
    assert state.short_cache_bits == 4


# texts of pieces that make chunks of every kind and length around the cache's limits: words,
# spaces, punctuation, digits, newlines, apostrophes, non-ASCII letters, digits and symbols
TEXT_PIECES = ["a", "b", "the", "quick", "brownfoxjumps", "overthelazydog", " ", "  ", "\n", "\r\n", "\t",
               ",", ".", "...", "'s", "'", "1", "2024", "é", "ünïcödé", "²", "“", "—", "中文", "🙂", "\u00a0"]


@settings(max_examples=40, deadline=None)
@given(pieces=st.lists(st.sampled_from(TEXT_PIECES), min_size=1, max_size=300),
       bits=st.sampled_from([(1, 1), (2, 2), (1, 6), (16, 16)]))
def test_short_chunk_cache_on_the_text_path_on_generated_texts(trained, pieces, bits):
    """The split-and-encode loop over generated texts, three passes with one state whose short
    cache is tiny and fixed, tiny and growing, or full size: every pass equals the regex split
    encoded chunk by chunk (the later passes are answered from the caches)."""
    tok = _with_pattern(trained[0], "cl100k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["cl100k"]
    text = "".join(pieces)
    expected = _regex_reference(tok, text)
    state = EncodeState(short_cache_bits=bits[0], short_cache_max_bits=bits[1])
    for _ in range(3):
        assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == expected


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
def test_short_chunk_cache_lookups_at_block_and_lag_boundaries(trained, name):
    """The split-and-encode loop looks a chunk up a fixed number of chunks after it prefetched
    its set, and the block's last chunks after the scan: texts of 1..40 chunks and of chunk
    counts around one and two blocks of 256, ending in a one-byte chunk or a longer one,
    cached and uncached, with a tiny and a full-size short cache, equal the regex split."""
    tok = _with_pattern(trained[0], name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    words = ["the", "of", "and", "a", "in", "to", "is", "was", "it", "for"]
    counts = list(range(1, 41)) + [c + d for c in (128, 256, 512) for d in range(-18, 19, 3)]
    for bits in (1, 16):
        state = EncodeState(short_cache_bits=bits, short_cache_max_bits=bits)
        for count in counts:
            for last in (".", " end"):
                text = "".join(" " + words[k % len(words)] for k in range(count - 1)) + last  # count chunks
                expected = _regex_reference(tok, text)
                for _ in range(2):  # the second pass is answered by the caches
                    assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == expected


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
@settings(max_examples=30, deadline=None)
@given(runs=st.lists(st.tuples(st.integers(0, 140), st.sampled_from(["é", "中", "🙂", "\n  ", " 12345 ", "'s "])),
                     min_size=1, max_size=12))
def test_encode_text_takes_block_starts_across_scanner_blocks(trained, name, runs):
    """The split-and-encode loop gives out a 64-byte block's chunk starts itself and asks the
    scanner again only when they run out: ASCII runs of every length up to a few blocks,
    broken by non-ASCII characters (whose blocks the scanner goes through chunk by chunk),
    newlines before spaces, digits and contractions at any offset from a block's edge, equal
    the regex split."""
    tok = _with_pattern(trained[0], name)
    core, pattern = tok._core(), TILING_PATTERN_IDS[name]
    words = "the quick brown fox jumps over a lazy dog and "
    text = "".join((words * 4)[:length] + piece for length, piece in runs)
    expected = _regex_reference(tok, text)
    state = EncodeState()
    for _ in range(2):  # the second pass is answered by the caches
        assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == expected


def test_short_chunk_cache_one_byte_texts(trained):
    """Texts of one and two bytes over and over, once their chunks are cached: a one-byte
    chunk that ends the text is encoded, not copied from the cache (whose hits write two ids)."""
    tok = _with_pattern(trained[0], "gpt2")
    core, pattern = tok._core(), TILING_PATTERN_IDS["gpt2"]
    state = EncodeState(short_cache_bits=4, short_cache_max_bits=4)
    texts = ["a", "b", " ", ".", "ab", "a.", " a", "a b", "é", "a", "."]
    for _ in range(3):
        for text in texts:
            assert core.encode_text(text.encode("utf-8"), pattern, state).tolist() == _regex_reference(tok, text)


def test_short_chunk_cache_does_not_hide_a_byte_outside_the_vocabulary():
    """A byte the vocabulary lacks is an error wherever it sits, also after cached chunks."""
    tok = Tokenizer([bytes([b]) for b in range(255)] + [b"ab"], [(97, 98)])  # no 0xff
    core = tok._core()
    state = EncodeState()
    chunks = [b"ab", b"ab", b"a"]
    core.encode_chunks(*_chunked(chunks), state)
    with pytest.raises(ValueError, match="0xff"):
        core.encode_chunks(*_chunked(chunks + [b"\xff"]), state)
    with pytest.raises(ValueError, match="0xff"):
        core.encode_chunks(*_chunked(chunks + [b"a\xff"]), state)


_NAME_PARTS = ["<", "|", ">", "s", "é", "😀", "\ud800", "a", " "]


@given(st.lists(st.lists(st.sampled_from(_NAME_PARTS), max_size=4).map("".join), max_size=5),
       st.lists(st.lists(st.sampled_from(_NAME_PARTS), max_size=12).map("".join), max_size=6))
def test_name_finder_equals_substring_search(names, texts):
    # names sharing first characters ("<|", "<s"), of one character, empty, non-ASCII, and with
    # a lone surrogate (no UTF-8: the search by characters instead of bytes)
    finder = NameFinder(names)
    want = [k for k, text in enumerate(texts) if any(name and name in text for name in names)]
    assert finder.holding(texts).tolist() == want
    for start in range(len(texts) + 1):  # (a range of the list: indices still the list's)
        stop = (start + len(texts) + 1) // 2
        assert finder.holding(texts, start, stop).tolist() == [k for k in want if start <= k < stop]
    assert [finder.holds(text) for text in texts] == [k in want for k in range(len(texts))]
    with pytest.raises(TypeError):
        finder.holds(b"<s>")
    with pytest.raises(TypeError, match="text 1"):
        finder.holding(["a", 1])
    with pytest.raises(ValueError, match="outside a list"):
        finder.holding(["a"], 1, 2)


def test_a_core_is_built_once():
    core = BPECore([b"a", b"b", b"ab"], np.array([0], np.int32), np.array([1], np.int32))
    with pytest.raises(RuntimeError, match="built once"):
        core.__init__([b"x", b"y"], np.zeros(0, np.int32), np.zeros(0, np.int32))
    assert core.encode_bytes(b"ab", EncodeState()).tolist() == [2]


def test_a_state_moved_to_another_core_forgets_the_first_ones_ids():
    """A state's caches map chunk bytes to one core's ids: used with another core, they are
    emptied first; a shared cache, which other threads read, refuses a second core."""
    from fastbpe._core.encode import SharedCache

    merging = BPECore([b"a", b"b", b"ab"], np.array([0], np.int32), np.array([1], np.int32))
    plain = BPECore([b"a", b"b"], np.zeros(0, np.int32), np.zeros(0, np.int32))
    pattern = fused_scanner_id("gpt2")
    state = EncodeState()
    for _ in range(2):  # (each text's chunk is in the state's caches when the other core comes)
        assert merging.encode_text(b"ab", pattern, state).tolist() == [2]
        assert plain.encode_text(b"ab", pattern, state).tolist() == [0, 1]
    shared = SharedCache()
    merging.encode_text(b"ab", pattern, EncodeState(shared=shared))
    with pytest.raises(ValueError, match="serves one core"):
        plain.encode_text(b"ab", pattern, EncodeState(shared=shared))


def test_byte_table_keeps_the_offsets_it_checked():
    from fastbpe._core.encode import ByteTable

    offsets = np.array([0, 1, 3])
    table = ByteTable(np.frombuffer(b"abc", np.uint8), offsets)
    offsets[1:] = [10**12, 10**12 + 10]  # (the caller's array, changed afterwards)
    assert table.gather([1, 0]) == b"bca"
    with pytest.raises(ValueError, match="dimensions"):
        ByteTable(np.frombuffer(b"abc", np.uint8), np.zeros((2, 2), np.int64))


def _fast_derive_merges(token_bytes):
    from fastbpe._core.encode import derive_merges

    return list(zip(*(a.tolist() for a in derive_merges(list(token_bytes)))))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=7).map(lambda b: bytes(x % 3 + 97 for x in b)), max_size=60),
       st.randoms(use_true_random=False))
def test_derived_merges_equal_the_reference(tokens, random):
    """Rank-only vocabularies over a three-letter alphabet (ties and overlaps everywhere, as in
    "aaaa"): some single letters late or missing, unused ids among them."""
    letters = [b"a", b"b", b"c"]
    random.shuffle(letters)
    vocabulary = list(dict.fromkeys(letters[:random.randint(0, 3)] + tokens + letters)) + [b""] * 3
    random.shuffle(vocabulary)
    assert _fast_derive_merges(vocabulary) == reference.encode.derive_merges(vocabulary)


def test_derived_merges_of_real_rank_files_equal_the_reference(shared_data):
    tok = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    tokens = list(tok.token_bytes[:6000])
    assert _fast_derive_merges(tokens) == reference.encode.derive_merges(tokens)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "é", "😀"]), min_size=1, max_size=6).map("".join), max_size=40,
                unique=True),
       st.lists(st.booleans(), min_size=40, max_size=40))
def test_two_piece_splits_equal_the_reference(texts, joinable):
    """A scored vocabulary's splits (every way a piece is two pieces, never inside a
    character), some pieces not joinable; a joinable text listed twice is a ValueError."""
    from fastbpe._core.encode import two_piece_splits

    pieces, joinable = [text.encode() for text in texts], joinable[:len(texts)]
    fast = list(zip(*(a.tolist() for a in two_piece_splits(pieces, joinable))))
    assert fast == reference.encode.two_piece_splits(pieces, joinable)
    if pieces:
        for splits in (two_piece_splits, reference.encode.two_piece_splits):
            with pytest.raises(ValueError, match="repeats an earlier piece"):
                splits(pieces + pieces[:1], [True] * (len(pieces) + 1))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["", "a", "b", "é", "😀", "ab"]), max_size=4).map("".join), max_size=30))
def test_first_repeat_equals_the_reference(texts):
    """The first text that repeats an earlier one (the empty text too), and that earlier one."""
    from fastbpe._core.encode import first_repeat

    items = [text.encode() for text in texts]
    assert first_repeat(items) == reference.encode.first_repeat(items)


@pytest.mark.parametrize("items", [[], [b"ab", b"", b"c"], [b"a", bytearray(b"b")], [b"a", memoryview(b"b")],
                                   [b"a", "b"], [None], [type("B", (bytes,), {})(b"x")]])
def test_byte_lengths_equal_the_reference(items):
    """Lengths when every item is a bytes object, None for anything else (a subclass too)."""
    from fastbpe._core.encode import byte_lengths

    fast = byte_lengths(items)
    expected = reference.encode.byte_lengths(items)
    assert (fast is None and expected is None) or fast.tolist() == expected


def test_a_huge_token_gets_its_merge():
    """Tokens of 1, 2, 4, ... 2**17 letters, then one of 2**18: its rule joins 2**18 parts, in
    O(n log n) steps (rescanning every pair after each join took hours; the time is measured by
    the asv suite, not here)."""
    tokens = [b"a" * (1 << k) for k in range(19)] + [b"ab" * (1 << 16), b"b"]
    merges = _fast_derive_merges(tokens)
    assert merges[:18] == [(k - 1, k - 1, k) for k in range(1, 19)]
    assert merges[18:] == []  # "abab..." is made of "a" and "b" parts only: no two parts
    assert len(Tokenizer(tokens, None, merge_rule="token").merges) == 18


def test_derived_merges_only_join_tokens():
    """A rank-only vocabulary where a token's rule ends on a byte that is no token: that token
    has no merge (not one that names another token)."""
    from fastbpe._core.encode import derive_merges

    assert [a.tolist() for a in derive_merges([b"ab"])] == [[], [], []]
    # "xab": "x" + "ab"; "ab" itself ends as two bytes, one of which ("b") is no token
    assert [a.tolist() for a in derive_merges([b"a", b"x", b"ab", b"xab"])] == [[1], [2], [3]]
    assert len(Tokenizer([b"x", b"ab", b"a"], None, merge_rule="token").merges) == 0
    with pytest.raises(ValueError, match=r"token 2 \(b'a'\) repeats an earlier token"):
        derive_merges([b"a", b"b", b"a"])
