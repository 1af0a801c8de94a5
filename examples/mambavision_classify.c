/* The README's MambaVision example: MambaVision-T weights from a
 * .safetensors file (or seeded ones without an argument), a graph for a
 * batch of two 224x224 images, run twice, top class per image.
 *   example_mambavision_classify [weights.safetensors] */
#include <mvrt/mvrt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 2, CLASSES = 1000, IMAGE = 224 };
static float images[BATCH * 3 * IMAGE * IMAGE], logits[2][BATCH * CLASSES];

static int fail(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, mvrt_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof images / sizeof *images; i++)
        images[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;

    mvrt_backend_t *be;
    mvrt_stream_t *s;
    mvrt_model_config_t cfg;
    mvrt_model_t *model = NULL;
    mvrt_graph_t *graph;
    if (mvrt_backend_open("auto", &be) != MVRT_OK || mvrt_stream_create(be, &s) != MVRT_OK)
        return fail("backend");
    mvrt_model_config_preset("T", &cfg);
    if (argc > 1) {  /* e.g. made by tools/convert_checkpoint.py from the official checkpoint */
        mvrt_safetensors_t *file;
        if (mvrt_safetensors_open(argv[1], &file) != MVRT_OK ||
            mvrt_model_load(be, &cfg, file, "", &model) != MVRT_OK)
            return fail("weights");
        mvrt_safetensors_close(file);  /* the model holds its own copy on the device */
    } else if (mvrt_model_init_random(be, &cfg, 0, &model) != MVRT_OK) {
        return fail("model");
    }
    mvrt_graph_options_t opt = {.batch = BATCH, .height = IMAGE, .width = IMAGE};
    if (mvrt_graph_create(model, &opt, &graph) != MVRT_OK)  /* plans and allocates everything */
        return fail("graph");
    mvrt_tensor_t in, out;
    mvrt_graph_input(graph, &in);     /* (2, 3, 224, 224) f32 inside the graph's workspace */
    mvrt_graph_output(graph, &out);   /* (2, 1000) */
    for (int run = 0; run < 2; run++) {  /* on a GPU the second run replays a CUDA graph */
        if (mvrt_copy_host_to_device(s, in.buffer, in.offset, images, sizeof images) != MVRT_OK ||
            mvrt_graph_run(graph, s, NULL, NULL) != MVRT_OK ||
            mvrt_copy_device_to_host(s, logits[run], out.buffer, out.offset, sizeof logits[run]) != MVRT_OK ||
            mvrt_stream_synchronize(s) != MVRT_OK)
            return fail("run");
    }
    for (int b = 0; b < BATCH; b++) {
        int best = 0;
        for (int c = 1; c < CLASSES; c++)
            if (logits[0][b * CLASSES + c] > logits[0][b * CLASSES + best])
                best = c;
        printf("image %d: class %d (logit %.4f)\n", b, best, logits[0][b * CLASSES + best]);
    }
    int same = memcmp(logits[0], logits[1], sizeof logits[0]) == 0;
    printf("second run %s the first\n", same ? "bit-identical to" : "DIFFERS from");
    mvrt_graph_destroy(graph);
    mvrt_model_destroy(model);
    mvrt_stream_destroy(s);
    mvrt_backend_close(be);
    return same ? 0 : 1;
}
