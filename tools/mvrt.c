/* mvrt: command-line front end (info, check, bench). */
#include <stdio.h>
#include <string.h>

#include "mvrt/mvrt.h"
#include "commands.h"

static void print_usage(FILE *to)
{
    fprintf(to,
            "mvrt %s - Mamba selective scan / MambaVision runtime\n"
            "\n"
            "usage:\n"
            "  mvrt run [--backend NAME] [--config T] [--batch N] [--weights FILE] ...\n"
            "                                     run MambaVision: images/s, latency, checksum\n"
            "  mvrt classify [--weights FILE] [--config T] [--top K] [--json] FILE|DIR...\n"
            "                                     top-K ImageNet classes of JPEG / PNG files\n"
            "  mvrt info                          backends, devices, why unavailable\n"
            "  mvrt check FILE [--backend NAME] [--dtype f32|f16|bf16] [--strided]\n"
            "             [--threads N] [--verbose]\n"
            "                                     run every case of a scan golden file forward\n"
            "                                     and backward, compare, PASS/FAIL per case;\n"
            "                                     MambaVision golden files through graphs\n"
            "  mvrt bench scan [--backend NAME] [--threads LIST] [--quick] [--anchor JSON]\n"
            "                                     time the scan on the ANCHORS.md shapes\n"
            "  mvrt bench model|block [--backend NAME] [--quick] [--profile] [--only TEXT]\n"
            "                                     MambaVision-T and its stage-3 block vs ANCHORS.md\n"
            "  mvrt --version | --help\n",
            mvrt_version());
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("mvrt %s\n", mvrt_version());
        return 0;
    }
    if (strcmp(cmd, "info") == 0)
        return mvrt_cmd_info(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return mvrt_cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return mvrt_cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "classify") == 0)
        return mvrt_cmd_classify(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return mvrt_cmd_bench(argc - 1, argv + 1);
    fprintf(stderr, "mvrt: unknown command '%s'\n\n", cmd);
    print_usage(stderr);
    return 2;
}
