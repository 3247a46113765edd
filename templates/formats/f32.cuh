// f32: dense IEEE binary32 weights, row-major; element i of a row is the little-endian f32
// at byte 4i. No scales.
#ifndef NINFER_FMT_F32
#define NINFER_FMT_F32
#define FMT_ELEM float
#define FMT_LOAD(p, i) ((p)[i])
{% include "formats/dense.cuh" %}
#endif  // NINFER_FMT_F32
