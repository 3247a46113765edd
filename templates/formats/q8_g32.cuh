// q8_g32: 8-bit signed integers, group 32 along K, one IEEE f16 scale per group.
// Quant plane: each byte is one int8 value (element i = byte i of the row), as GGUF Q8_0's qs.
// Values are two's complement in [-2^(b-1), 2^(b-1)-1]; x = scale * q.
// Scale plane: per row, K/32 little-endian f16 scales in group order.
// The shared rules (bit stream, plane offsets, alignment) are in formats/sym_int.cuh.
#ifndef NINFER_FMT_Q8_G32
#define NINFER_FMT_Q8_G32
#define FMT_BITS {{ fmt.bits }}
#define FMT_GROUP {{ fmt.group }}
{% include "formats/sym_int.cuh" %}
#endif  // NINFER_FMT_Q8_G32
