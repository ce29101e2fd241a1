// IEEE 754 binary16 conversion for fp16 gradient transfer (round to nearest even, no hardware
// needed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dagsgd::runtime {

std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);

void floats_to_halves(const float* in, std::uint16_t* out, std::size_t n);
void halves_to_floats(const std::uint16_t* in, float* out, std::size_t n);

}  // namespace dagsgd::runtime
