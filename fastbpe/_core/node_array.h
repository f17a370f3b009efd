// The allocator of the learner's node array (one 16-byte node per symbol of the table: 63 MB
// for 100 MB of English). std::allocator value-initialises, zeroing every node before step 0
// writes it again, and takes 4 KB pages, one page fault each on first touch (15k of them).
// This one leaves the nodes uninitialised (every node is set before it is read: set_node, in
// step 0) and asks for huge pages for a block of 2 MB or more.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#ifdef __linux__
#include <sys/mman.h>
#endif

namespace fbpt {

template <class T>
struct UninitHugeAllocator {
    using value_type = T;
    UninitHugeAllocator() = default;
    template <class U>
    UninitHugeAllocator(const UninitHugeAllocator<U>&) noexcept {}

    T* allocate(size_t n) {
        const size_t huge = (size_t)1 << 21;
        size_t bytes = n * sizeof(T);
        void* p;
        if (bytes >= huge) {
            bytes = (bytes + huge - 1) / huge * huge;  // aligned_alloc wants a multiple
            p = std::aligned_alloc(huge, bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
            if (p) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
        } else {
            p = std::malloc(bytes ? bytes : 1);
        }
        if (p == nullptr) throw std::bad_alloc();
        return (T*)p;
    }
    void deallocate(T* p, size_t) noexcept { std::free(p); }

    // resize() default-initialises: no zeroing of a trivial T
    template <class U>
    void construct(U* p) noexcept { ::new ((void*)p) U; }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) { ::new ((void*)p) U(std::forward<Args>(args)...); }

    template <class U>
    bool operator==(const UninitHugeAllocator<U>&) const noexcept { return true; }
    template <class U>
    bool operator!=(const UninitHugeAllocator<U>&) const noexcept { return false; }
};

}  // namespace fbpt
