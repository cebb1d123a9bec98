// A downstream C++ program built through find_package(ram): the header's
// extern "C" block, RAII over the opaque handles, and a real call chain
// (create a model, classify a blank image, read the error of a bad call).
#include <ram/ram.h>

#include <cstdio>
#include <memory>
#include <vector>

namespace {

struct model_deleter {
    void operator()(ram_model *m) const { ram_model_free(m); }
};
struct state_deleter {
    void operator()(ram_state *s) const { ram_state_free(s); }
};
using model_ptr = std::unique_ptr<ram_model, model_deleter>;
using state_ptr = std::unique_ptr<ram_state, state_deleter>;

} // namespace

int main() {
    ram_model_params p;
    ram_model_params_init(&p);
    ram_model *raw_model = nullptr;
    if (ram_model_create(&p, &raw_model) != RAM_OK) {
        std::fprintf(stderr, "model_create: %s\n", ram_last_error());
        return 1;
    }
    model_ptr model(raw_model);
    ram_state *raw_state = nullptr;
    if (ram_state_create(model.get(), 2, &raw_state) != RAM_OK) {
        std::fprintf(stderr, "state_create: %s\n", ram_last_error());
        return 1;
    }
    state_ptr state(raw_state);

    std::vector<float> images(2 * p.channels * p.height * p.width, 0.0f);
    int labels[2] = {-1, -1};
    if (ram_model_classify(model.get(), state.get(), images.data(), 2, labels, nullptr, nullptr) !=
        RAM_OK) {
        std::fprintf(stderr, "classify: %s\n", ram_last_error());
        return 1;
    }
    if (labels[0] < 0 || labels[0] >= p.classes || labels[0] != labels[1]) {
        std::fprintf(stderr, "classify gave labels %d %d\n", labels[0], labels[1]);
        return 1;
    }
    // A bad call must come back as a status with a message, not a crash.
    if (ram_model_classify(model.get(), state.get(), images.data(), 3, labels, nullptr, nullptr) ==
        RAM_OK) {
        std::fprintf(stderr, "a batch larger than the state was accepted\n");
        return 1;
    }
    std::printf("libram %s from C++: %zu parameters, label %d; bad batch: %s\n",
                ram_version_string(), ram_model_param_count(model.get()), labels[0],
                ram_last_error());
    return 0;
}
