// Ids of the compiled split patterns and of the UTF-8 error modes: the one definition every
// layer uses. Python reads them from fastbpe._core.split (PATTERN_IDS, ERRORS_IDS); the cut
// rules of cut.h are these ids plus RULE_CUSTOM.
#pragma once

namespace fbpt {

// A split pattern with a compiled scanner (scan.h). PAT_COUNT is the number of them: a valid
// id p has 0 <= p < PAT_COUNT.
// PAT_QWEN: Qwen2 and Qwen3's pattern, llama3's with one digit a chunk (\p{N} for \p{N}{1,3}).
// PAT_TEKKEN: Mistral's (tekken.json), o200k's without the contractions and with one digit a chunk.
enum Pattern {
    PAT_WHITESPACE = 0, PAT_GPT2 = 1, PAT_CL100K = 2, PAT_O200K = 3, PAT_LLAMA3 = 4, PAT_QWEN = 5, PAT_TEKKEN = 6,
    PAT_COUNT = 7
};

// Whether a pattern has o200k's words (an upper-case run then a lower-case one) and its
// [\r\n/]* after punctuation: o200k and tekken.
constexpr bool o200k_words(int pattern) { return pattern == PAT_O200K || pattern == PAT_TEKKEN; }

// What a scanner does with invalid UTF-8 (see scan_document in scan.h).
enum Errors { ERR_STRICT = 0, ERR_REPLACE = 1, ERR_BYTES = 2, ERR_COUNT = 3 };

// Chunks of every pattern but PAT_WHITESPACE tile the text (no byte is dropped), which is what
// the encoder's one-pass split needs.
static inline bool pattern_tiles(int pattern) { return pattern > PAT_WHITESPACE && pattern < PAT_COUNT; }

}  // namespace fbpt
