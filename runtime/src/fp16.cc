// Bit-exact binary16 <-> binary32 conversion; values out of range saturate to infinity.
#include "dagsgd/runtime/fp16.h"

#include <cstring>

namespace dagsgd::runtime {

std::uint16_t float_to_half(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, sizeof x);
  auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  std::uint32_t exp = (x >> 23) & 0xFFu;
  std::uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) {  // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7C00u | (mant != 0 ? 0x200u : 0u));
  }
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1F) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow -> inf
  if (e <= 0) {
    // Subnormal half (or zero): shift the mantissa with its implicit bit, rounding to even.
    if (e < -10) return sign;
    mant |= 0x800000u;
    auto shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t half_mant = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1u);
    std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u) != 0)) ++half_mant;
    return static_cast<std::uint16_t>(sign | half_mant);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1FFFu;
  // A carry out of the mantissa correctly bumps the exponent (up to inf).
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0)) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t x = 0;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3FFu;
      x = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1F) {
    x = sign | 0x7F800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f = 0;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

void floats_to_halves(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_half(in[i]);
}

void halves_to_floats(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

}  // namespace dagsgd::runtime
