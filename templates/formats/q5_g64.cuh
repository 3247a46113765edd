// q5_g64: 5-bit signed integers, group 64 along K, one IEEE f16 scale per group.
// Quant plane: eight values per 5 bytes: element i sits at stream bits [5i, 5i+5), e.g.
// element 1 = bits 5-7 of byte 0 (low) and bits 0-1 of byte 1 (high); a group is 40 bytes
// (ten little-endian 32-bit words).
// Values are two's complement in [-16, 15]; x = scale * q.
// Scale plane: per row, K/64 little-endian f16 scales in group order.
// The shared rules (bit stream, plane offsets, alignment) are in formats/sym_int.cuh.
#ifndef NINFER_FMT_Q5_G64
#define NINFER_FMT_Q5_G64
#define FMT_BITS {{ fmt.bits }}
#define FMT_GROUP {{ fmt.group }}
{% include "formats/sym_int.cuh" %}
#endif  // NINFER_FMT_Q5_G64
