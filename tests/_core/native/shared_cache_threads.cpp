// Threads inserting into and reading one SharedChunkCache at once; built with ThreadSanitizer
// by test_shared_cache.py, which fails on any report or any wrong lookup (exit status 1).
//  1. Four threads, each a random walk over 20,000 keys (2..1040 bytes, ids that name the key):
//     found -> its ids are checked, missing -> inserted.
//  2. The table emptied, then four threads insert the same 3,000 keys in the same order at
//     once (races for one slot with an equal key), each reading its key back.
// Run twice: a big table (nothing refused), and one for max_ids = 3000 (full after a few
// hundred keys: inserts refused, lookups still right).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shared_cache.h"

using fbpt::SharedChunkCache;

static std::string key_of(int k) {  // (distinct keys: each starts with its own number)
    std::string unit = "k" + std::to_string(k) + ":", out;
    size_t n = unit.size() + (k % 7 == 0 ? 600 + k % 400 : k % 40);
    while (out.size() < n) out += unit;
    out.resize(n);
    return out;
}

static int64_t ids_of(int k, std::vector<int32_t>& ids) {
    ids.clear();
    for (int i = 0; i < 1 + k % 5; ++i) ids.push_back(k * 10 + i);
    return (int64_t)ids.size();
}

static bool right(const int32_t* found, int64_t count, int k) {
    std::vector<int32_t> want;
    if (count != ids_of(k, want)) return false;
    for (int64_t i = 0; i < count; ++i)
        if (found[i] != want[i]) return false;
    return true;
}

static long run(size_t max_ids) {
    SharedChunkCache cache(max_ids);
    const int THREADS = 4;
    std::atomic<long> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; ++t)
        threads.emplace_back([&, t]() {
            int arena = cache.take_arena();
            std::mt19937 rng(t);
            std::vector<int32_t> ids;
            for (int step = 0; step < 60000; ++step) {
                int k = (int)(rng() % 20000);
                std::string key = key_of(k);
                const uint8_t* p = (const uint8_t*)key.data();
                uint64_t h = fbpt::bytes_map_hash(p, key.size());
                int64_t count = 0;
                const int32_t* found = cache.find(p, key.size(), h, &count);
                if (found != nullptr)
                    bad += !right(found, count, k);
                else
                    cache.insert(arena, p, key.size(), h, ids.data(), ids_of(k, ids));
            }
            cache.give_back(arena);
        });
    for (std::thread& t : threads) t.join();
    threads.clear();
    cache.clear();
    if (cache.size() != 0) ++bad;
    std::atomic<int> ready{0};
    for (int t = 0; t < THREADS; ++t)
        threads.emplace_back([&]() {
            int arena = cache.take_arena();
            std::vector<int32_t> ids;
            for (++ready; ready.load() < THREADS;) {
            }
            for (int k = 0; k < 3000; ++k) {
                std::string key = key_of(k);
                const uint8_t* p = (const uint8_t*)key.data();
                uint64_t h = fbpt::bytes_map_hash(p, key.size());
                bool held = cache.insert(arena, p, key.size(), h, ids.data(), ids_of(k, ids));
                int64_t count = 0;
                const int32_t* found = cache.find(p, key.size(), h, &count);
                if (held && found == nullptr) ++bad;
                if (found != nullptr) bad += !right(found, count, k);
            }
            cache.give_back(arena);
        });
    for (std::thread& t : threads) t.join();
    // capacity() is a hard bound however the threads raced, and size() counts exactly the
    // entries stored (every reservation not used was given back)
    size_t stored = 0;
    for (int k = 0; k < 3000; ++k) {
        std::string key = key_of(k);
        int64_t count = 0;
        stored += cache.find((const uint8_t*)key.data(), key.size(),
                             fbpt::bytes_map_hash((const uint8_t*)key.data(), key.size()), &count) != nullptr;
    }
    if (cache.size() > cache.capacity() || cache.size() != stored) ++bad;
    if (max_ids >= 1000000 && cache.size() != 3000) ++bad;  // (each key once, whoever won)
    std::printf("max_ids %zu: %zu keys, full %d, %ld wrong\n", max_ids, cache.size(), (int)cache.full(), bad.load());
    return bad.load();
}

int main() { return run(4000000) + run(3000) != 0; }
