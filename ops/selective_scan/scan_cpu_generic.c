/* The CPU scan kernels built for one instruction set (generic, 4 f32 lanes);
 * compiled with that ISA's -m flags (cpu_kernels.cmake) and only called
 * when the CPU has it (scan_cpu.c). */
#define MVRT_SCAN_LANES 4
#define MVRT_SCAN_SUFFIX generic
#include "scan_cpu_impl.h"
