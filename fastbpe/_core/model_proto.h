// The pieces of a SentencePiece .model file (the protobuf bytes of its ModelProto), read in one
// pass: formats/sentencepiece.py's bulk reader. It reads what the Python field-by-field reader,
// the reference, reads, and refuses with -1 exactly what that reader refuses (a number or a
// field running past its end, a wire type other than 0, 1, 2 and 5, a piece whose text is not
// UTF-8 or is missing): the reference then says what is wrong.
//
// The messages, as sentencepiece_model.proto numbers them (a field of any other number, or of
// another wire type than these, is skipped):
//   ModelProto       1: pieces (repeated SentencePiece), 2: trainer_spec, 3: normalizer_spec
//   SentencePiece    1: piece (string), 2: score (float), 3: type (enum, a varint)
// Within a piece the last of a repeated field wins, as protobuf merges them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "utf8.h"

namespace fbpt {

struct ModelPieces {
    std::vector<uint8_t> blob;    // piece k's text: blob[ends[k - 1]:ends[k]] (UTF-8, not empty)
    std::vector<int64_t> ends;
    std::vector<double> scores;   // its score (a float32, 0 when absent)
    std::vector<uint64_t> kinds;  // its type (1, NORMAL, when absent)
    std::vector<int64_t> specs;   // (field number, begin, end) of each trainer or normalizer spec, in file order
};

// The varint at p[at]: protobuf's, at most 10 bytes, the value kept to 64 bits. false when it
// runs past n or past 10 bytes.
static inline bool proto_varint(const uint8_t* p, size_t n, size_t& at, uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 70 && at < n; shift += 7) {  // (shifts 0 to 63: ten bytes)
        uint8_t byte = p[at++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) return true;
    }
    return false;
}

// The field at p[at]: its number and wire type, its varint (wire 0) or the span [begin, end) of
// its bytes (wires 1, 2 and 5), and at moved past it. false for another wire type or a field
// running past n.
static inline bool proto_field(const uint8_t* p, size_t n, size_t& at, uint64_t& number, int& wire,
                               uint64_t& value, size_t& begin, size_t& end) {
    uint64_t key;
    if (!proto_varint(p, n, at, key)) return false;
    number = key >> 3;
    wire = (int)(key & 7);
    if (wire == 0) return proto_varint(p, n, at, value);
    uint64_t size;
    if (wire == 2) {
        if (!proto_varint(p, n, at, size)) return false;
    } else if (wire == 1 || wire == 5) {
        size = wire == 1 ? 8 : 4;
    } else {
        return false;
    }
    if (size > n - at) return false;
    begin = at;
    end = at + (size_t)size;
    at = end;
    return true;
}

// One SentencePiece message, p[begin:end], appended to out. false where the reference raises.
static inline bool proto_piece(const uint8_t* p, size_t begin, size_t end, ModelPieces& out) {
    size_t at = begin, text_begin = 0, text_end = 0, field_begin = 0, field_end = 0;
    bool has_text = false;
    double score = 0.0;
    uint64_t kind = 1, number, value = 0;
    int wire;
    while (at < end) {
        if (!proto_field(p, end, at, number, wire, value, field_begin, field_end)) return false;
        if (number == 1 && wire == 2) {
            if (!utf8_valid(p + field_begin, field_end - field_begin)) return false;
            text_begin = field_begin, text_end = field_end, has_text = true;
        } else if (number == 2 && wire == 5) {
            float f;  // (little-endian, as protobuf writes it)
            uint32_t bits = (uint32_t)p[field_begin] | (uint32_t)p[field_begin + 1] << 8 |
                            (uint32_t)p[field_begin + 2] << 16 | (uint32_t)p[field_begin + 3] << 24;
            std::memcpy(&f, &bits, sizeof f);
            score = (double)f;
        } else if (number == 3 && wire == 0) {
            kind = value;
        }
    }
    if (!has_text || text_end == text_begin) return false;
    out.blob.insert(out.blob.end(), p + text_begin, p + text_end);
    out.ends.push_back((int64_t)out.blob.size());
    out.scores.push_back(score);
    out.kinds.push_back(kind);
    return true;
}

// The pieces of the ModelProto p[0:n] into out, and the spans of its specs. Returns the number of
// pieces, or -1 where the reference raises.
static inline int64_t parse_model_pieces(const uint8_t* p, size_t n, ModelPieces& out) {
    size_t at = 0, begin = 0, end = 0;
    // Room reserved once (the texts are fewer bytes than the file; a piece's message takes
    // about 15 bytes of it, so n / 8 pieces is room to spare for the usual model): the vectors
    // grew by doubling, each regrowth a copy of everything so far. Pages untouched cost nothing.
    out.blob.reserve(n);
    out.ends.reserve(n / 8);
    out.scores.reserve(n / 8);
    out.kinds.reserve(n / 8);
    uint64_t number, value;
    int wire;
    while (at < n) {
        if (!proto_field(p, n, at, number, wire, value, begin, end)) return -1;
        if (wire != 2) continue;
        if (number == 1) {
            if (!proto_piece(p, begin, end, out)) return -1;
        } else if (number == 2 || number == 3) {
            out.specs.insert(out.specs.end(), {(int64_t)number, (int64_t)begin, (int64_t)end});
        }
    }
    return (int64_t)out.kinds.size();
}

}  // namespace fbpt
