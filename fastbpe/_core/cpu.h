// The instruction sets beyond the build's baseline: code for them (utf8.h's AVX2 validator,
// scan.h's AVX-512 block classifier) is compiled with a target attribute of its own and chosen
// at run time, so that the package still runs on a CPU without them.
// FBPT_X86_TARGETS: the compiler can do that here.
#pragma once
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define FBPT_X86_TARGETS 1

namespace fbpt {

// Whether this CPU runs AVX2 / AVX-512BW (asked once).
static inline bool cpu_has_avx2() {
    static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
    return has;
}
// AVX2 with BMI1 and BMI2 (every CPU with AVX2 has them, but the check is cheap): the
// scanner's AVX2 block loader uses all three.
static inline bool cpu_has_avx2_bmi2() {
    static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
                             __builtin_cpu_supports("bmi2"));
    return has;
}
static inline bool cpu_has_avx512bw() {
    static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx512bw"));
    return has;
}

}  // namespace fbpt
#endif
