// f16: dense IEEE binary16 weights, row-major; element i of a row is the little-endian u16
// at byte 2i. No scales.
#ifndef NINFER_FMT_F16
#define NINFER_FMT_F16
{% include "common/types.cuh" %}
#define FMT_ELEM f16_t
#define FMT_LOAD(p, i) f16_to_f32((p)[i])
{% include "formats/dense.cuh" %}
#endif  // NINFER_FMT_F16
