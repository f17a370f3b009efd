"""The ids the compiled core exports (patterns, error modes, cut rules, merge rules) and the
checks every entry point makes on them."""
import numpy as np
import pytest

from fastbpe._core.count import ChunkCounter
from fastbpe._core.encode import MERGE_RULE_IDS, MERGE_RULES, BPECore
from fastbpe._core.split import CUSTOM_CUT_RULE, ERRORS_IDS, PATTERN_IDS, chunk_ends, find_cut


def test_ids_are_dense():
    assert sorted(PATTERN_IDS.values()) == list(range(len(PATTERN_IDS)))
    assert sorted(ERRORS_IDS.values()) == list(range(len(ERRORS_IDS)))
    assert CUSTOM_CUT_RULE == len(PATTERN_IDS)   # the rule after the patterns' own
    assert [MERGE_RULE_IDS[name] for name in MERGE_RULES] == list(range(len(MERGE_RULES)))


def test_unknown_ids_are_rejected():
    bad_pattern, bad_errors = len(PATTERN_IDS), len(ERRORS_IDS)
    with pytest.raises(ValueError, match="unknown pattern id"):
        chunk_ends(b"a b", bad_pattern)
    with pytest.raises(ValueError, match="unknown pattern id"):
        chunk_ends(b"a b", PATTERN_IDS["gpt2"], bad_errors)
    with pytest.raises(ValueError, match="unknown pattern id"):
        ChunkCounter().add_documents(b"a b", np.array([3], dtype=np.int64), bad_pattern, 0)
    with pytest.raises(ValueError, match="unknown cut rule"):
        find_cut(b"a b", 0, CUSTOM_CUT_RULE + 1)
    with pytest.raises(ValueError, match="unknown cut rule"):
        find_cut(b"a b", 0, -1)
    assert find_cut(b"a b", 0, CUSTOM_CUT_RULE) == 1
    with pytest.raises(ValueError, match="merge_rule"):
        BPECore([b"a"], np.zeros(0, np.int32), np.zeros(0, np.int32), merge_rule="rank")
