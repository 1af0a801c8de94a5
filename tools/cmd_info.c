/* placeholder: replaced by the implementation of 'mvrt info' */
#include <stdio.h>
#include "commands.h"
int mvrt_cmd_info(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "mvrt info: not built yet\n");
    return 2;
}
