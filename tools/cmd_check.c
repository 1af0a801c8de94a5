/* placeholder: replaced by the implementation of 'mvrt check' */
#include <stdio.h>
#include "commands.h"
int mvrt_cmd_check(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "mvrt check: not built yet\n");
    return 2;
}
