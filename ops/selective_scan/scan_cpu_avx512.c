/* The CPU scan kernels built for one instruction set (avx512, 16 f32 lanes);
 * compiled with that ISA's -m flags (cpu_kernels.cmake) and only called
 * when the CPU has it (scan_cpu.c). */
#define MVRT_SCAN_LANES 16
#define MVRT_SCAN_SUFFIX avx512
#include "scan_cpu_impl.h"
