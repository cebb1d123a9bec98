/* hello: classify one MNIST digit with a trained libram model.
 * usage: hello MODEL.ram t10k-images-idx3-ubyte [INDEX] */
#include <ram/ram.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.ram IMAGES-idx3-ubyte [INDEX]\n", argv[0]);
        return 1;
    }
    long index = argc > 3 ? atol(argv[3]) : 0;
    /* An MNIST image file: a 16-byte header, then 28 x 28 bytes per image. */
    unsigned char px[28 * 28];
    FILE *f = fopen(argv[2], "rb");
    int ok = f && index >= 0 && index < 100000000L &&
             fseek(f, 16 + index * (long)sizeof px, SEEK_SET) == 0 &&
             fread(px, 1, sizeof px, f) == sizeof px;
    if (f) fclose(f);
    if (!ok) {
        fprintf(stderr, "cannot read image %ld of %s\n", index, argv[2]);
        return 1;
    }
    float image[28 * 28], probs[256];
    for (int i = 0; i < 28 * 28; i++)
        image[i] = px[i] / 255.0f; /* libram takes float pixels, typically in [0, 1] */

    ram_model *model = NULL;
    ram_state *state = NULL;
    ram_model_params p;
    ram_model_params_init(&p); /* sets p.struct_size, which get_params needs */
    ram_status s;
    int label, rc = 1;
    if ((s = ram_model_load(argv[1], &model)) != RAM_OK ||
        (s = ram_model_get_params(model, &p)) != RAM_OK ||
        (s = ram_state_create(model, 1, &state)) != RAM_OK)
        fprintf(stderr, "libram: %s (%s)\n", ram_last_error(), ram_status_string(s));
    else if (p.channels != 1 || p.height != 28 || p.width != 28 || p.classes > 256)
        fprintf(stderr, "%s is not a 28x28 MNIST model\n", argv[1]);
    else if ((s = ram_model_classify(model, state, image, 1, &label, probs, NULL)) != RAM_OK)
        fprintf(stderr, "libram: %s (%s)\n", ram_last_error(), ram_status_string(s));
    else {
        printf("image %ld: class %d (probability %.3f)\n", index, label, probs[label]);
        rc = 0;
    }
    ram_state_free(state);
    ram_model_free(model);
    return rc;
}
