"""Build the compiled core: every ``fastbpe/_core/*.pyx`` becomes ``fastbpe._core.<name>``.

Compiler directives are set once, below. Each extension depends on every header of
``fastbpe/_core`` (``depends=``), so editing a header rebuilds the modules that include it.
``FASTBPE_DEBUG=1`` turns bounds checks, wraparound and initialisation checks back on and builds
without optimisation, for chasing a crash:

    FASTBPE_DEBUG=1 python -m pip install -e . --no-build-isolation

``FASTBPE_SANITIZE=1`` builds with AddressSanitizer and UndefinedBehaviorSanitizer
(``-fsanitize=address,undefined -O1 -g -fno-omit-frame-pointer``). Python itself is not built
with them, so the ASan runtime must be loaded first:

    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 python -m pytest ...

``.ci/sanitize`` does all of it in a separate environment (CI runs it after the tests). The
flags do not change the sources, so switching a checkout's own build between them needs
``build_ext --force``.
"""
import glob
import multiprocessing
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("FASTBPE_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("FASTBPE_SANITIZE", "") not in ("", "0")
CORE = os.path.join("fastbpe", "_core")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "nonecheck": DEBUG,
    "embedsignature": True,
}
# Hidden symbols: the calls between the compiled core's functions are direct, not through the
# PLT (each module exports only its PyInit_, which CPython marks visible).
compile_args = (["-O0", "-g"] if DEBUG else ["-O3"]) + ["-fvisibility=hidden"]
link_args = []
if SANITIZE:
    sanitizers = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    compile_args = (["-O0"] if DEBUG else ["-O1"]) + ["-g", "-fvisibility=hidden"] + sanitizers
    link_args = sanitizers
headers = sorted(glob.glob(os.path.join(CORE, "*.h")))

extensions = [
    Extension(
        "fastbpe._core." + os.path.splitext(os.path.basename(path))[0],
        [path],
        language="c++",
        include_dirs=[np.get_include(), CORE],
        depends=headers,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=compile_args + ["-std=c++17"],
        extra_link_args=link_args,
    )
    for path in sorted(glob.glob(os.path.join(CORE, "*.pyx")))
]

# The modules are compiled side by side, one a core (a plain `pip install` passes no -j; an
# explicit one still wins), and translated so where processes fork (Cython's pool of processes
# would run this file again in each one that a spawning platform starts).
jobs = os.cpu_count() or 1
translators = jobs if multiprocessing.get_start_method() == "fork" else 0
setup(
    ext_modules=cythonize(extensions, compiler_directives=directives, annotate=False, nthreads=translators),
    options={"build_ext": {"parallel": jobs}},
)
