"""The scanner's 64-byte block classifiers: the SSE2 one and, on a CPU with AVX2 or AVX-512BW,
the ones chosen there at run time give every class mask exactly as the byte-at-a-time
classifier does (the splitting tests hold that one, through the scanner, to the ``regex``
module)."""
import subprocess

import pytest

from tests.native import build_checked, program_env


def test_the_vector_block_classifiers_agree_with_the_bytewise_one(tmp_path):
    """native/classify_blocks.cpp: every byte value at every position of a block, and random
    blocks of the classes' edge bytes, for each pattern's masks; built with AddressSanitizer and
    UBSan where the compiler has them."""
    program = str(tmp_path / "classify_blocks")
    built = build_checked("classify_blocks.cpp", program)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([program], capture_output=True, text=True, env=program_env(), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert int(run.stdout.split()[-2]) > 800_000  # (every block was checked)
    flags = run.stdout.split("\n", 1)[0].split()  # "avx2 <0|1> avx512bw <0|1>"
    if flags[1::2] == ["0", "0"]:
        pytest.skip("this CPU (or compiler) has neither AVX2 nor AVX-512BW: only the SSE2 classifier was checked")
