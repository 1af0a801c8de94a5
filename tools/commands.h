/* Sub-commands of the `mvrt` program. Each returns the process exit code. */
#ifndef MVRT_TOOLS_COMMANDS_H
#define MVRT_TOOLS_COMMANDS_H

int mvrt_cmd_info(int argc, char **argv);   /* mvrt info */
int mvrt_cmd_check(int argc, char **argv);  /* mvrt check FILE [--backend NAME] */
int mvrt_cmd_bench(int argc, char **argv);  /* mvrt bench scan|model|block [--backend NAME] ... */
int mvrt_cmd_run(int argc, char **argv);    /* mvrt run [--backend NAME] [--config T] ... */
int mvrt_cmd_classify(int argc, char **argv); /* mvrt classify [--weights FILE] FILE|DIR... */

#endif
