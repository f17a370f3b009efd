"""fastbpe side by side with the other BPE libraries, on your machine.

    python -m benchmarks.peers                       # 10 MB of english.txt.gz, 3 repeats
    python -m benchmarks.peers --quick               # 1 MB, 1 repeat: a minute and a half or so
    python -m benchmarks.peers --sizes 1MB,10MB,100MB --repeats 3 --threads 1
    python -m benchmarks.peers --corpus my.txt --vocab 50000

What it does, with the same settings for every library (byte-level BPE where the library has it,
GPT-2 split, ``--vocab`` tokens, ``--min-frequency``, ``--threads`` threads:
``RAYON_NUM_THREADS`` for Hugging Face, ``num_threads`` for sentencepiece, ``n_threads`` for
youtokentome, ``workers`` for fastbpe):

1. **Training** on the first ``--size`` bytes of the corpus, every library in turn (alternating,
   so drift of the machine hits all alike), ``--repeats`` times, each run in a fresh subprocess so
   that the peak RSS (the child's own ``VmHWM``) is that run's alone. fastbpe reports its
   counting and merge phases apart too (``merge phase`` rows).
2. **Encoding** the same text with each trained tokenizer and with OpenAI's ranks (tiktoken; and
   fastbpe's own loader of them, ``fastbpe.openai`` or ``Tokenizer.from_tiktoken``), same protocol.
3. **Agreement**: the merges of fastbpe (``compat="hf"`` when that option exists) against Hugging
   Face's, and the ids of fastbpe against tiktoken's on the same ranks; stated in the tables.
4. **Languages** (``parallel_multi.tsv.gz``): encode throughput per language and the "token tax"
   (tokens per row relative to English, on rows translated into all nine languages).
5. A markdown report, the raw JSON and PNG plots in ``--out`` (default
   ``benchmarks/results/scratch``, git-ignored: a run never overwrites the committed results in
   ``benchmarks/results``; pass ``--out benchmarks/results`` to replace them on purpose, then
   ``python -m benchmarks.peers.report --readme`` to update the READMEs' figures).

Libraries that are not installed are skipped, and say so. Install them with the ``peers`` extra
(``pip install -e ".[peers,bench]"``); youtokentome is not in the extra (it has no wheels for
recent Pythons and builds from source): ``pip install youtokentome`` if you want it.

The modules: ``run`` (the plan and the parent side: fresh child processes, libraries alternating,
the machine recorded), ``child`` (one job inside a child), ``adapters`` (one per library, the
same interface), ``report`` (tables, JSON, plots).
"""
