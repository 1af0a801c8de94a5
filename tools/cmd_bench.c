/* placeholder: replaced by the implementation of 'mvrt bench' */
#include <stdio.h>
#include "commands.h"
int mvrt_cmd_bench(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "mvrt bench: not built yet\n");
    return 2;
}
