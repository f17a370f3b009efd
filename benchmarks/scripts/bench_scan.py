"""Benchmark the compiled pre-tokenizer scanners (fastbpe/_core/scan.h) alone, this checkout
against a git ref, in one process.

    python benchmarks/scripts/bench_scan.py                        # vs main, 10 MB of english.txt.gz
    python benchmarks/scripts/bench_scan.py --ref HEAD~1 --patterns cl100k o200k
    python benchmarks/scripts/bench_scan.py --file my.txt --reps 21

Both versions of scan.h (and the headers beside it) are compiled into one C++ program, each in
its own namespace, which scans the text with A (the ref) and B (the checkout's files) in turn, --reps
times, and prints the best CPU time of each: the loop of next_chunk from chunk to chunk (of
ChunkStarts where scan.h has it, else of Scanner), as the encoder and count_words run it, with nothing done per chunk but summing its end. Timing
the two in one process, alternating, is what makes small differences visible on a shared
machine: separate processes, even with the same code, differ by 10-25% there, while A against
an identical B agrees within about 1%. "same" means both gave the same chunks (the sum of the
chunk ends and their number). Needs a C++17 compiler (CXX, default g++) and git.
"""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # this checkout: benchmarks.data

from benchmarks.data import data_dir  # noqa: E402
from fastbpe._core.split import PATTERN_IDS  # noqa: E402

CORE = "fastbpe/_core"
HEADERS = ["scan.h", "utf8.h", "patterns.h", "unicode_tables.h", "cpu.h"]  # (scan.h and what it includes)
PATTERNS = ["gpt2", "cl100k", "o200k", "llama3"]  # the patterns whose chunks tile the text

# One version: compiled with -Dfbpt=<its namespace> -DSCAN_ENTRY=<its function>.
VERSION_CC = r"""
#include "scan.h"
#include <ctime>
template <int P>
static double scan_once(const uint8_t* d, size_t n, uint64_t* sum, uint64_t* count) {
    timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
#ifdef CHUNK_STARTS  // (a version whose consumers find chunks through ChunkStarts)
    fbpt::ChunkStarts<P> scanner(d, n);
#define NEXT_CHUNK(p) scanner.next_chunk(p)
#else
    const fbpt::Scanner scanner(d, n);
#define NEXT_CHUNK(p) scanner.next_chunk<P>(p)
#endif
    size_t p = 0;
    uint64_t s = 0, c = 0;
    while (p < n) {
        size_t e = NEXT_CHUNK(p);
        s += e;
        ++c;
        p = e;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    *sum = s;
    *count = c;
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}
double SCAN_ENTRY(int pattern, const uint8_t* d, size_t n, uint64_t* sum, uint64_t* count) {
    switch (pattern) {
        case fbpt::PAT_GPT2: return scan_once<fbpt::PAT_GPT2>(d, n, sum, count);
        case fbpt::PAT_CL100K: return scan_once<fbpt::PAT_CL100K>(d, n, sum, count);
        case fbpt::PAT_O200K: return scan_once<fbpt::PAT_O200K>(d, n, sum, count);
        default: return scan_once<fbpt::PAT_LLAMA3>(d, n, sum, count);
    }
}
"""

# The driver: argv = text file, repetitions, then pattern ids; prints one line per pattern.
MAIN_CC = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
double scan_a(int, const uint8_t*, size_t, uint64_t*, uint64_t*);
double scan_b(int, const uint8_t*, size_t, uint64_t*, uint64_t*);
int main(int argc, char** argv) {
    FILE* f = std::fopen(argv[1], "rb");
    if (!f) return 1;
    std::vector<uint8_t> text;
    uint8_t buf[1 << 16];
    size_t k;
    while ((k = std::fread(buf, 1, sizeof buf, f)) > 0) text.insert(text.end(), buf, buf + k);
    std::fclose(f);
    int reps = std::atoi(argv[2]);
    for (int i = 3; i < argc; ++i) {
        int pattern = std::atoi(argv[i]);
        double best_a = 1e30, best_b = 1e30;
        uint64_t sum_a = 0, sum_b = 0, count_a = 0, count_b = 0;
        for (int r = 0; r < reps; ++r) {
            double ta = scan_a(pattern, text.data(), text.size(), &sum_a, &count_a);
            double tb = scan_b(pattern, text.data(), text.size(), &sum_b, &count_b);
            if (ta < best_a) best_a = ta;
            if (tb < best_b) best_b = tb;
        }
        std::printf("%d %.6f %.6f %llu %d\n", pattern, best_a, best_b, (unsigned long long)count_b,
                    sum_a == sum_b && count_a == count_b);
    }
    return 0;
}
"""


def text_file(args, tmp: str) -> str:
    if args.file:
        return args.file
    out = os.path.join(tmp, "text.txt")
    with gzip.open(os.path.join(data_dir(), "english.txt.gz"), "rb") as f:
        data = f.read(int(args.mb * 1_000_000))
    with open(out, "wb") as f:
        f.write(data)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default="main", help="git ref of version A (default main)")
    ap.add_argument("--file", help="text to scan (default: the first --mb MB of english.txt.gz)")
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--reps", type=int, default=11, help="scans of each version, alternating; best is kept")
    ap.add_argument("--patterns", nargs="+", default=PATTERNS, choices=PATTERNS)
    args = ap.parse_args()
    cxx = os.environ.get("CXX", "g++")
    with tempfile.TemporaryDirectory() as tmp:
        ref_dir = os.path.join(tmp, "ref")
        os.mkdir(ref_dir)
        for name in HEADERS:
            got = subprocess.run(["git", "-C", ROOT, "show", f"{args.ref}:{CORE}/{name}"], capture_output=True)
            if got.returncode:
                sys.exit(f"git show {args.ref}:{CORE}/{name}: {got.stderr.decode(errors='replace').strip()}")
            blob = got.stdout
            with open(os.path.join(ref_dir, name), "wb") as f:
                f.write(blob)
        for name, code in (("version.cc", VERSION_CC), ("main.cc", MAIN_CC)):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(code)
        flags = ["-O3", "-std=c++17"]
        version = os.path.join(tmp, "version.cc")
        for tag, include in (("a", ref_dir), ("b", os.path.join(ROOT, CORE))):
            with open(os.path.join(include, "scan.h")) as f:
                starts = ["-DCHUNK_STARTS"] if "class ChunkStarts" in f.read() else []
            subprocess.run([cxx, *flags, *starts, "-c", f"-Dfbpt=fbpt_{tag}", f"-DSCAN_ENTRY=scan_{tag}",
                            f"-I{include}", version, "-o", os.path.join(tmp, f"{tag}.o")], check=True)
        program = os.path.join(tmp, "scan_ab")
        subprocess.run([cxx, *flags, os.path.join(tmp, "main.cc"), os.path.join(tmp, "a.o"),
                        os.path.join(tmp, "b.o"), "-o", program], check=True)
        path = text_file(args, tmp)
        size = os.path.getsize(path)
        pattern_ids = [str(PATTERN_IDS[name]) for name in args.patterns]
        out = subprocess.run([program, path, str(args.reps), *pattern_ids], check=True, capture_output=True,
                             text=True).stdout
        print(f"{size / 1e6:.1f} MB, best of {args.reps}; A = {args.ref}, B = this checkout")
        for name, line in zip(args.patterns, out.splitlines()):
            _, ta, tb, chunks, same = line.split()
            ta, tb = float(ta), float(tb)
            print(f"{name:7s} A {ta * 1e3:7.1f} ms {size / ta / 1e6:6.0f} MB/s   B {tb * 1e3:7.1f} ms "
                  f"{size / tb / 1e6:6.0f} MB/s   B/A {tb / ta:.3f}   {int(chunks)} chunks, "
                  f"{'same' if same == '1' else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
