// q6_g64: 6-bit signed integers, group 64 along K, one IEEE f16 scale per group.
// Quant plane: four values per 3 bytes: element i sits at stream bits [6i, 6i+6), e.g. element 1 = bits 6-7 of byte 0 (low) and bits 0-3 of byte 1 (high); a group is 48 bytes.
// Values are two's complement in [-2^(b-1), 2^(b-1)-1]; x = scale * q.
// Scale plane: per row, K/64 little-endian f16 scales in group order.
// The shared rules (bit stream, plane offsets, alignment) are in formats/sym_int.cuh.
#ifndef NINFER_FMT_Q6_G64
#define NINFER_FMT_Q6_G64
#define FMT_BITS {{ fmt.bits }}
#define FMT_GROUP {{ fmt.group }}
{% include "formats/sym_int.cuh" %}
#endif  // NINFER_FMT_Q6_G64
