# Declarations of poll.h: a long loop's look at whether to stop early (Ctrl-C), and the check a
# call made on the main thread gives it.
from libc.stdint cimport int64_t

cdef extern from "poll.h" namespace "fbpt" nogil:
    const int64_t POLL_UNITS

    # a long loop calls check(context) every so often, and stops (throws) on nonzero
    cdef cppclass Poll:
        int (*check)(void*) noexcept nogil
        void* context
        bint checking

cdef extern from "Python.h":
    # (not cpython.exc's declaration, which raises: a poll's check returns the -1 to C++ and
    # leaves KeyboardInterrupt set for the binding's `except +` to raise); with the GIL held
    int check_signals_with_gil "PyErr_CheckSignals"() noexcept


cdef inline int check_signals(void* unused) noexcept nogil:
    """A poll's check for a call of the main thread (only it runs signal handlers; set it on no
    other, whose loops would take the GIL for nothing): nonzero, KeyboardInterrupt (or what a
    signal handler raised) set, when the call should stop."""
    with gil:
        return check_signals_with_gil()
