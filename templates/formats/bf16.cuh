// bf16: dense bfloat16 weights, row-major; element i of a row is the little-endian u16 at
// byte 2i (the high half of the f32 bits). No scales.
#ifndef NINFER_FMT_BF16
#define NINFER_FMT_BF16
{% include "common/types.cuh" %}
#define FMT_ELEM bf16_t
#define FMT_LOAD(p, i) bf16_to_f32((p)[i])
{% include "formats/dense.cuh" %}
#endif  // NINFER_FMT_BF16
