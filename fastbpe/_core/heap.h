// A binary heap in a std::vector, ordered by a comparison `before(x, y)`: x pops before y.
// The learner's candidate merges and the encoder's candidate pairs both use it. Sift-up and
// sift-down move a hole instead of swapping, one write per level.
#pragma once
#include <cstddef>
#include <vector>

namespace fbpt {

template <class T, class Before>
class Heap {
  public:
    size_t size() const { return h_.size(); }
    bool empty() const { return h_.empty(); }
    const T& top() const { return h_[0]; }  // not empty
    void clear() { h_.clear(); }
    size_t capacity() const { return h_.capacity(); }
    void release() { std::vector<T>().swap(h_); }  // clear and free the memory
    void reserve(size_t n) { h_.reserve(n); }

    void push(const T& e) {
        size_t i = h_.size();
        h_.push_back(e);
        while (i > 0) {
            size_t parent = (i - 1) >> 1;
            if (!before_(e, h_[parent])) break;
            h_[i] = h_[parent];
            i = parent;
        }
        h_[i] = e;
    }

    T pop() {  // not empty
        T top = h_[0];
        T last = h_.back();
        h_.pop_back();
        if (!h_.empty()) sift_down(0, last);
        return top;
    }

    // Build from unordered entries in O(n): add() them, then make().
    void add(const T& e) { h_.push_back(e); }
    void make() {
        for (size_t i = h_.size() / 2; i-- > 0;) sift_down(i, h_[i]);
    }

  private:
    std::vector<T> h_;
    Before before_;

    // Put e in the hole at i (the rest below i a heap), moving the hole down past every
    // child that must pop before e.
    void sift_down(size_t i, T e) {
        size_t n = h_.size();
        while (true) {
            size_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && before_(h_[child + 1], h_[child])) ++child;
            if (!before_(h_[child], e)) break;
            h_[i] = h_[child];
            i = child;
        }
        h_[i] = e;
    }
};

}  // namespace fbpt
