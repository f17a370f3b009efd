// A growable array of a trivially copyable T in pages of its own (the learner's pair records,
// the position lists' headers).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#ifdef __linux__
#include <sys/mman.h>
#endif

namespace fbpt {

// Doubling remaps the pages (mremap on Linux) where std::vector allocates the new block beside
// the old one and copies: on one long chunk the records reach ~50 MB, and that moment of both
// blocks was the training's peak. Pages past size() are mapped but never touched: not resident.
template <class T>
class MappedArray {
  public:
    MappedArray() = default;
    ~MappedArray() {
#ifdef __linux__
        if (data_) munmap(data_, cap_ * sizeof(T));
#else
        std::free(data_);
#endif
    }
    MappedArray(const MappedArray&) = delete;
    MappedArray& operator=(const MappedArray&) = delete;

    T& operator[](size_t i) { return data_[i]; }
    const T& operator[](size_t i) const { return data_[i]; }
    T* data() { return data_; }
    const T* data() const { return data_; }
    size_t size() const { return size_; }
    size_t capacity() const { return cap_; }
    void push_back(const T& value) {
        if (size_ == cap_) grow();
        data_[size_++] = value;
    }

  private:
    T* data_ = nullptr;
    size_t size_ = 0, cap_ = 0;

    void grow() {
        size_t cap = cap_ ? 2 * cap_ : 4096;  // whole pages, whatever sizeof(T)
#ifdef __linux__
        void* p = data_ ? mremap(data_, cap_ * sizeof(T), cap * sizeof(T), MREMAP_MAYMOVE)
                        : mmap(nullptr, cap * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
#else
        void* p = std::realloc(data_, cap * sizeof(T));
        if (!p) throw std::bad_alloc();
#endif
        data_ = (T*)p;
        cap_ = cap;
    }
};

}  // namespace fbpt
