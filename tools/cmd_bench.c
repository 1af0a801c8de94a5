/* mvrt bench: benchmarks that print ratios, not only times (bench/). */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "commands.h"

static void bench_usage(FILE *to)
{
    fprintf(to,
            "usage: mvrt bench scan [--backend NAME] [--threads LIST] [--quick] [--dtype f32|f16|bf16]\n"
            "                       [--only TEXT] [--anchor JSON]\n"
            "       mvrt bench model|block [--backend NAME] [--quick] [--profile] [--only TEXT]\n"
            "                              [--anchor JSON]\n"
            "  scan   selective scan forward + backward on the shared/ANCHORS.md shapes\n"
            "  model  MambaVision-T/B/L networks through graphs vs PyTorch (ANCHORS.md);\n"
            "         --anchor: also the ratio to each PyTorch mode of the same config,\n"
            "         batch and precision in torch_mambavision.py's JSON of the same call\n"
            "  block  MambaVision stage-3 blocks through graphs vs PyTorch (ANCHORS.md)\n");
}

int mvrt_cmd_bench(int argc, char **argv)
{
    /* argv[0] is "bench" */
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "scan"))
        return mvrt_bench_scan(argc - 1, argv + 1);
    if (!strcmp(argv[1], "model") || !strcmp(argv[1], "block"))
        return mvrt_bench_model(argc - 1, argv + 1);
    fprintf(stderr, "mvrt bench: unknown benchmark '%s'\n", argv[1]);
    bench_usage(stderr);
    return 2;
}
