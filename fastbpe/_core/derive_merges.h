// The merges of a rank-only vocabulary (a tiktoken file), for encode.pyx's derive_merges.
//
// For every token of two or more bytes, run tiktoken's rule on its bytes using only tokens of
// lower rank (repeatedly join the adjacent parts whose concatenation has the lowest rank):
// when that ends in exactly two parts, they are the token's merge. A token it cannot reach
// gets no merge; tiktoken still produces it through its whole-chunk lookup.
// Cost: O(sum of squared token lengths).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace fbpt {

// tokens[i] is the bytes of id i ("" for an unused id). Appends (left, right, new) per merge,
// in rank order.
static inline void derive_merges(const std::vector<std::string>& tokens, std::vector<int32_t>& left,
                                 std::vector<int32_t>& right, std::vector<int32_t>& made) {
    std::unordered_map<std::string, int32_t> ids;
    for (size_t i = 0; i < tokens.size(); ++i)
        if (!tokens[i].empty()) ids[tokens[i]] = (int32_t)i;
    std::vector<size_t> cut;  // part boundaries: part j is content[cut[j]:cut[j + 1]]
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& content = tokens[i];
        if (content.size() < 2) continue;
        cut.clear();
        for (size_t j = 0; j <= content.size(); ++j) cut.push_back(j);
        while (cut.size() > 2) {
            int32_t best = -1;
            size_t best_j = 0;
            for (size_t j = 0; j + 2 < cut.size(); ++j) {
                auto it = ids.find(content.substr(cut[j], cut[j + 2] - cut[j]));
                if (it == ids.end()) continue;
                int32_t r = it->second;
                if (r < (int32_t)i && (best < 0 || r < best)) {
                    best = r;
                    best_j = j;
                }
            }
            if (best < 0) break;
            cut.erase(cut.begin() + best_j + 1);
        }
        if (cut.size() == 3) {
            // (two parts, but a byte never joined is a part too, and it may be no token: a
            // vocabulary without some single bytes; then the token has no merge either)
            auto l = ids.find(content.substr(0, cut[1])), r = ids.find(content.substr(cut[1]));
            if (l == ids.end() || r == ids.end()) continue;
            left.push_back(l->second);
            right.push_back(r->second);
            made.push_back((int32_t)i);
        }
    }
}

}  // namespace fbpt
