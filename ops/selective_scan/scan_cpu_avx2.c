/* The CPU scan kernels built for one instruction set (avx2, 8 f32 lanes);
 * compiled with that ISA's -m flags (cpu_kernels.cmake) and only called
 * when the CPU has it (scan_cpu.c). */
#define MVRT_SCAN_LANES 8
#define MVRT_SCAN_SUFFIX avx2
#include "scan_cpu_impl.h"
