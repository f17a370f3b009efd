"""What one call costs: encoding a short text and decoding a few ids, fastbpe against tiktoken.

    flock /tmp/fastbpe-bench.lock python benchmarks/scripts/bench_calls.py [--encoding cl100k_base] [--rounds 3]

Chat and serving code encodes one message at a time and decodes a few ids per step, where the
cost of a call, not throughput, is what counts. Both libraries load the same rank file (the
shared data's ``tokenizers/tiktoken/NAME.tiktoken``; tiktoken through its own constructor spec)
in this process; each row is timed with ``timeit`` (the best of 5 repeats of N calls, CPU time
of every thread: tiktoken's ``encode_batch`` starts a thread pool per call; the batch rows make
a hundredth of the calls), fastbpe and tiktoken alternating, for ``--rounds`` rounds: the table
shows each library's median nanoseconds per call and the median of the per-round ratios, with the load average. The ids of
every text are checked to be the same first. The batch rows take 1, 4 and 16 lines of English
(5-300 characters each), and the loop row the same 16 lines through ``encode`` one by one.
Needs tiktoken and the shared data.
"""
import argparse
import os
import statistics
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout: its fastbpe, benchmarks

import fastbpe  # noqa: E402
from benchmarks.suites.common import corpus_text, tiktoken_encoding, tiktoken_file  # noqa: E402

TEXTS = {"5 characters": "Hello", "40 characters": "Hello world, this is a short sentence.",
         "300 characters": "Hello world, this is a short sentence. " * 7 + "The end."}


def per_call_ns(call, number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=5, timer=time.process_time)) / number * 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoding", default="cl100k_base")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20000, help="calls per repeat")
    args = parser.parse_args()
    ours = fastbpe.openai(args.encoding, str(tiktoken_file(args.encoding)))
    theirs = tiktoken_encoding(args.encoding)
    ids = theirs.encode_ordinary(corpus_text("english", "100KB"))
    rows = {}
    for name, text in TEXTS.items():
        assert ours.encode(text) == theirs.encode(text), name
        rows[f"encode, {name}"] = (lambda t=text: ours.encode(t), lambda t=text: theirs.encode(t))
    assert ours.encode_ordinary(TEXTS["40 characters"]) == theirs.encode_ordinary(TEXTS["40 characters"])
    rows["encode_ordinary, 40 characters"] = (lambda: ours.encode_ordinary(TEXTS["40 characters"]),
                                              lambda: theirs.encode_ordinary(TEXTS["40 characters"]))
    for k in (1, 4, 64):
        piece = ids[1000:1000 + k]
        assert ours.decode(piece) == theirs.decode(piece)
        rows[f"decode, {k} id{'s' if k > 1 else ''}"] = (lambda p=piece: ours.decode(p), lambda p=piece: theirs.decode(p))
    rows["decode_single_token_bytes"] = (lambda: ours.decode_single_token_bytes(ids[1000]),
                                         lambda: theirs.decode_single_token_bytes(ids[1000]))
    # small batches of short texts: encode_batch against tiktoken's (which hands each batch to a
    # thread pool), and a loop of encode on the same texts; far fewer calls (a batch costs more)
    lines = [line for line in corpus_text("english", "1MB").splitlines() if 5 <= len(line) <= 300]
    batch_calls = max(args.calls // 100, 10)
    for n in (1, 4, 16):
        texts = lines[:n]
        assert ours.encode_batch(texts) == theirs.encode_batch(texts) == [theirs.encode(t) for t in texts]
        rows[f"encode_batch, {n} short text{'s' if n > 1 else ''}"] = (
            lambda t=texts: ours.encode_batch(t), lambda t=texts: theirs.encode_batch(t), batch_calls)
    texts = lines[:16]
    rows["encode in a loop, 16 short texts"] = (lambda: [ours.encode(t) for t in texts],
                                                lambda: [theirs.encode(t) for t in texts], batch_calls)
    import tiktoken

    load = os.getloadavg()[0]
    print(f"{args.encoding}, fastbpe {getattr(fastbpe, '__version__', '?')} against tiktoken {tiktoken.__version__}, "
          f"{args.rounds} rounds, load average {load:.1f}; nanoseconds per call (CPU time, best of 5 x {args.calls:,} "
          "calls), medians:\n")
    print("| call | fastbpe | tiktoken | tiktoken's time ÷ fastbpe's |")
    print("|---|---|---|---|")
    for name, (fast, peer, *calls) in rows.items():
        ours_ns, theirs_ns = [], []
        for r in range(args.rounds):
            for run, into in ((fast, ours_ns), (peer, theirs_ns))[::1 if r % 2 == 0 else -1]:
                into.append(per_call_ns(run, calls[0] if calls else args.calls))
        ratio = statistics.median(t / o for t, o in zip(theirs_ns, ours_ns))
        print(f"| {name} | {statistics.median(ours_ns):,.0f} | {statistics.median(theirs_ns):,.0f} | {ratio:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
