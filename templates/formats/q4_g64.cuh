// q4_g64: 4-bit signed integers, group 64 along K, one IEEE f16 scale per group.
// Quant plane: two values per byte: element 2j in the low nibble (bits 0-3) of byte j, element 2j+1 in the high nibble; a group is 32 bytes.
// Values are two's complement in [-2^(b-1), 2^(b-1)-1]; x = scale * q.
// Scale plane: per row, K/64 little-endian f16 scales in group order.
// The shared rules (bit stream, plane offsets, alignment) are in formats/sym_int.cuh.
#ifndef NINFER_FMT_Q4_G64
#define NINFER_FMT_Q4_G64
#define FMT_BITS {{ fmt.bits }}
#define FMT_GROUP {{ fmt.group }}
{% include "formats/sym_int.cuh" %}
#endif  // NINFER_FMT_Q4_G64
