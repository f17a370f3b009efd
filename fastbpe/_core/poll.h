// A long loop's look at whether to stop early (Ctrl-C): every POLL_UNITS units of work
// (chunks, positions, tokens) it calls the check its caller gave, which returns nonzero to
// stop; the loop then throws Interrupted and unwinds. The headers know nothing of Python: the
// check is the Cython layer's (the main thread takes the GIL and looks at pending signals,
// leaving KeyboardInterrupt set, which the binding's `except +` then raises in place of this
// exception). Invariant: a loop ticks only where stopping leaves nothing half-written that
// outlives the call (a cache entry is put after its ids are complete), and only loops reached
// through a binding declared `except +` tick with a check set.
#pragma once

#include <cstdint>
#include <exception>

namespace fbpt {

// About 10-40 ms of work between two checks: a chunk of English text, a merge of a long
// chunk, a token of the backtracking search each count one. A check costs a microsecond or so.
static const int64_t POLL_UNITS = 1 << 18;

struct Interrupted : std::exception {
    const char* what() const noexcept override { return "interrupted"; }
};

struct Poll {
    int (*check)(void*) = nullptr;  // nonzero: stop; nullptr: never stop
    void* context = nullptr;
    int64_t left = POLL_UNITS;      // units until the next check
    // True while the check runs: the call that ticked is paused mid-way, its scratch in use.
    // (The check runs Python's signal handlers, any code: one that encodes on this thread with
    // the same state must be refused, not let overwrite the paused call's buffers.)
    bool checking = false;

    // `units` of work done. A subtraction and a branch taken once in POLL_UNITS units.
    inline void tick(int64_t units = 1) {
        if ((left -= units) <= 0) due();
    }
    // The check, now (and the count started again).
    __attribute__((noinline, cold)) void due() {
        left = POLL_UNITS;
        if (check == nullptr) return;
        checking = true;
        int stop = check(context);
        checking = false;
        if (stop != 0) throw Interrupted();
    }
};

}  // namespace fbpt
