"""The C++ test programs of ``tests/_core/native``: built from one source file against the
compiled core's headers, and run without any preloaded sanitizer runtime; in the sanitizer lane
they skip (the normal run has built and run the same ones)."""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CORE = os.path.join(HERE, "..", "fastbpe", "_core")


def program_env() -> dict:
    """This process's environment without the AddressSanitizer runtime the sanitizer lane
    preloads (a program built with another sanitizer, or none, cannot run beside it)."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}


def build(source: str, program: str, flags) -> subprocess.CompletedProcess:
    """Compile ``tests/_core/native/<source>`` into ``program`` with ``flags``; skips the test
    when there is no C++ compiler. The caller checks the result (a missing sanitizer runtime
    shows in its stderr). Skips it in the sanitizer lane (``FASTBPE_SANITIZER_LANE``, set by
    ``.ci/sanitize``): the program is the same one the normal test run builds and runs, with
    its own sanitizers, whatever the Python extension was built with."""
    if os.environ.get("FASTBPE_SANITIZER_LANE", "") not in ("", "0"):
        pytest.skip("the normal test run builds and runs this C++ program (with its own sanitizers); "
                    "in the sanitizer lane it would repeat the very same check")
    env = program_env()
    compiler = shutil.which(env.get("CXX", "g++"))
    if compiler is None:
        pytest.skip("no C++ compiler to build the test program")
    return subprocess.run([compiler, "-std=c++17", *flags, "-I", CORE, os.path.join(HERE, "_core", "native", source),
                           "-o", program], capture_output=True, text=True, env=env)


def build_checked(source: str, program: str) -> subprocess.CompletedProcess:
    """``build`` with AddressSanitizer and UBSan (a read past a buffer fails the run), or
    without them where the compiler has no sanitizer runtimes."""
    built = build(source, program, ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
    if built.returncode != 0:
        built = build(source, program, ["-O1", "-g"])
    return built
