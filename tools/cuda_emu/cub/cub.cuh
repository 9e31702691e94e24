// tools/cuda_emu/cub/cub.cuh — the parts of CUB that TG_CUDA_EMU emulates (see each header).
#pragma once

#include <cub/device/device_radix_sort.cuh>
